import csv,sys,statistics as st
from collections import defaultdict
rows=list(csv.DictReader(open(sys.argv[1])))
d={}
for r in rows: d[(r['tag'],r['size'],r['rep'],r['config'])]=float(r['p50_us'])
rat=defaultdict(list)
for (tag,size,rep,cfg),v in d.items():
    if cfg!='bufpool': continue
    alg=tag.split()[0]
    rat[(alg,int(size))].append(v/d[(tag,size,rep,'default')])
algs=sorted({a for a,_ in rat}); sizes=sorted({s for _,s in rat})
print('| size | '+' | '.join(algs)+' |'); print('|---'*(len(algs)+1)+'|')
for s in sizes:
    print(f'| {s//1024}K | '+' | '.join(f"{st.median(rat[(a,s)]):.2f} ({min(rat[(a,s)]):.2f}-{max(rat[(a,s)]):.2f})" for a in algs)+' |')
