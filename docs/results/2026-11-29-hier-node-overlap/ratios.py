"""Per tag and size: median (min-max) over rounds of bufpool's p50 / the
default's p50 in the same job (coll_latency CSV; tags "NAME roundN").

    python3 ratios.py FILE.csv
"""
import csv,sys,collections,statistics
rows=list(csv.DictReader(open(sys.argv[1])))
d=collections.defaultdict(dict)
for r in rows:
    tag,rnd=r['tag'].rsplit(' ',1)
    d[(tag,int(r['size']),rnd)][r['config']]=float(r['p50_us'])
out=collections.defaultdict(list)
for (tag,size,rnd),v in d.items():
    if 'bufpool' in v and 'default' in v:
        out[(tag,size)].append(v['bufpool']/v['default'])
sizes=sorted({k[1] for k in out})
tags=sorted({k[0] for k in out})
print('size', *tags, sep='\t')
for s in sizes:
    cells=[]
    for t in tags:
        x=out.get((t,s),[])
        cells.append('%.2f (%.2f-%.2f)'%(statistics.median(x),min(x),max(x)) if x else '-')
    print(s,*cells,sep='\t')
