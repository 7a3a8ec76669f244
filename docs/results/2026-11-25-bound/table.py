import csv, statistics, collections
rows = list(csv.DictReader(open('docs/results/2026-11-25-bound/coll_latency.csv')))
d = collections.defaultdict(list)
for r in rows:
    d[(r['tag'], r['collective'], r['config'], int(r['size']))].append(float(r['p50_us']))
med = {k: statistics.median(v) for k, v in d.items()}
def show(tag, a, b):
    print(tag, a, '/', b)
    for s in sorted({k[3] for k in med if k[0] == tag}):
        x, y = med.get((tag,)+a+(s,)), med.get((tag,)+b+(s,))
        if x and y:
            print(f"  {s>>10:6d}K {x:10.0f} {y:10.0f} {x/y:5.2f}")
show('rh-vs-pw-4', ('reduce_scatter','bufpool'), ('reduce_scatter_block','bufpool'))
show('rh-vs-ring-4', ('reduce_scatter','bufpool'), ('reduce_scatter_block','bufpool'))
show('rh-vs-pw-8', ('reduce_scatter','bufpool'), ('reduce_scatter_block','bufpool'))
for c in ['reduce','bcast','gather','scan']:
    for mr in ['0','4']:
        show(f'bound-{mr}-8', (c,'bufpool'), (c,'default'))
