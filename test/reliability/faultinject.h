/*
 * Phase markers for libfaultinject.so (see faultinject.c).  A test program
 * calls faultinject_phase("collective") at the start of each part of its
 * run; when the interposer is preloaded, only calls made while the phase
 * named by FAULT_PHASE is current are counted towards FAULT_AT.  Without
 * the interposer the marker does nothing, so the same program runs both
 * ways and needs no link-time dependency on it.
 */
#ifndef FAULTINJECT_H
#define FAULTINJECT_H

#include <dlfcn.h>

typedef void (*faultinject_set_phase_fn)(const char *name);

static inline void faultinject_phase(const char *name)
{
    static faultinject_set_phase_fn set_phase;
    static int looked_up;
    if (!looked_up) {
        /* POSIX allows the object-to-function pointer conversion of dlsym. */
        *(void **)&set_phase = dlsym(RTLD_DEFAULT, "faultinject_set_phase");
        looked_up = 1;
    }
    if (set_phase) {
        set_phase(name);
    }
}

#endif /* FAULTINJECT_H */
