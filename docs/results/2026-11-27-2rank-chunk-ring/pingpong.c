#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <time.h>
static _Atomic long flag __attribute__((aligned(128)));
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void *peer(void*a){(void)a;pin(1);for(long i=1;i<=2000000;i+=2){while(atomic_load(&flag)!=i);atomic_store(&flag,i+1);}return 0;}
int main(void){pthread_t t;pthread_create(&t,0,peer,0);pin(0);struct timespec a,b;clock_gettime(CLOCK_MONOTONIC,&a);
for(long i=0;i<2000000;i+=2){atomic_store(&flag,i+1);while(atomic_load(&flag)!=i+2);}
clock_gettime(CLOCK_MONOTONIC,&b);pthread_join(t,0);printf("round trip %.1f ns\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/1e6);}
