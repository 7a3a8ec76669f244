#!/bin/sh
# ompi_info lists both components with every parameter the issues require,
# each with a help text, and docs/parameters.md's parameter table is exactly
# what ompi_info reports (so the documentation cannot drift from the code).
set -u
comps="$top_builddir/components"
if [ ! -e "$comps/mca_coll_bufpool.so" ] || [ ! -e "$comps/mca_mpool_regpar.so" ]; then
    echo "ompi_info_params: components not built in $comps" >&2
    exit 1
fi
OMPI_MCA_mca_base_component_path="$OMPI_SYSTEM_COMPONENT_DIR:$comps"
export OMPI_MCA_mca_base_component_path
info=${OMPI_INFO:-ompi_info}
fail=0

"$info" | grep -q "MCA mpool: regpar" || { echo "ompi_info does not list mpool regpar"; fail=1; }
"$info" | grep -q "MCA coll: bufpool" || { echo "ompi_info does not list coll bufpool"; fail=1; }

required_mpool="priority bucket_min bucket_max slab_size max_capacity gc_age hugepages verbose
  reg_backend reg_parallel reg_threads reg_chunk_size reg_threshold prefault ofi_provider verbs_device"
required_coll="priority segment_size pipeline_depth min_size verbose"
for c in allreduce reduce bcast allgather reduce_scatter reduce_scatter_block alltoall gather \
         scatter scan exscan barrier; do
    required_coll="$required_coll ${c}_enable ${c}_algorithm"
done

check_params() { # framework component names...
    fw=$1; comp=$2; shift 2
    parsable=$("$info" --param "$fw" "$comp" --level 9 --parsable)
    for p in "$@"; do
        name="${fw}_${comp}_$p"
        help=$(printf '%s\n' "$parsable" | grep "^mca:$fw:$comp:param:$name:help:" | head -n 1 |
               sed 's/^\([^:]*:\)\{6\}//')
        if [ -z "$help" ]; then
            echo "ompi_info: parameter $name missing or without help text"
            fail=1
        fi
    done
}
# shellcheck disable=SC2086
check_params mpool regpar $required_mpool
# shellcheck disable=SC2086
check_params coll bufpool $required_coll

# docs/parameters.md's table between its markers must match ompi_info.
expected=$("$top_srcdir/scripts/mca-params-table.sh")
documented=$(sed -n '/<!-- mca-params-table:begin -->/,/<!-- mca-params-table:end -->/p' \
    "$top_srcdir/docs/parameters.md" | sed '1d;$d')
if [ "$expected" != "$documented" ]; then
    echo "docs/parameters.md's MCA parameter table differs from ompi_info; regenerate it with"
    echo "  scripts/mca-params-table.sh --update-doc <builddir>/components"
    printf '%s\n' "$expected" >ompi_info_params.expected
    printf '%s\n' "$documented" >ompi_info_params.documented
    diff ompi_info_params.documented ompi_info_params.expected | head -n 20
    fail=1
fi
[ $fail = 0 ] && echo "ompi_info_params: every parameter listed with help; docs/parameters.md table current"
exit $fail
