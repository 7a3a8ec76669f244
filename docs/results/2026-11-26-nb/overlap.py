import csv,sys,statistics
d=sys.argv[1]
rows=[r for r in csv.DictReader(open(d+'/raw.csv')) if r.get('overlap_pct') not in (None,'n/a','')]
g={}
for r in rows:
    g.setdefault((r['collective'],int(r['size']),r['config']),[]).append(float(r['overlap_pct']))
def hs(s): return str(s) if s<1024 else ('%dK'%(s//1024) if s<1<<20 else '%dM'%(s>>20))
for c in sorted({k[0] for k in g}):
    sizes=sorted({k[1] for k in g if k[0]==c})
    print(c,' '.join('%s:%.0f/%.0f'%(hs(s),statistics.median(g[(c,s,'bufpool')]),statistics.median(g[(c,s,'default')])) for s in sizes if (c,s,'bufpool') in g and (c,s,'default') in g))
