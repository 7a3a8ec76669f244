#!/bin/sh
# Print the Markdown table of every MCA parameter of mpool/regpar and
# coll/bufpool, as ompi_info reports them (name, default, level, meaning).
# docs/parameters.md's table is this output (--update-doc rewrites it there;
# --update-readme, its name while the table was in the README, does the same);
# test/mpi/ompi_info_params.sh checks that they agree.
#   usage: scripts/mca-params-table.sh [--update-doc] [component-dir]
set -eu
case "${1:-}" in
--update-doc | --update-readme)
  shift
  top=$(cd "$(dirname "$0")/.." && pwd)
  doc="$top/docs/parameters.md"
  table=$("$0" "$@")
  awk -v table="$table" '
    /<!-- mca-params-table:begin -->/ { print; print table; skip = 1; next }
    /<!-- mca-params-table:end -->/ { skip = 0 }
    !skip { print }' "$doc" >"$doc.new"
  mv "$doc.new" "$doc"
  echo "docs/parameters.md: parameter table updated"
  exit 0
  ;;
esac
compdir=${1:-}
OMPI_INFO=${OMPI_INFO:-ompi_info}
sysdir=${OMPI_SYSTEM_COMPONENT_DIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
if [ -n "$compdir" ]; then
  OMPI_MCA_mca_base_component_path="$sysdir:$compdir"
  export OMPI_MCA_mca_base_component_path
fi
printf '| Parameter | Default | Level | Meaning |\n|---|---|---|---|\n'
for fc in "mpool regpar" "coll bufpool"; do
  # shellcheck disable=SC2086
  "$OMPI_INFO" --param $fc --level 9 --parsable 2>/dev/null |
    awk -F: '
      $4 == "param" { name = $5; key = $6;
        val = $0; for (i = 0; i < 6; i++) sub(/^[^:]*:/, "", val);
        if (!(name in seen)) { seen[name] = 1; order[++n] = name }
        if (key == "value") value[name] = val;
        if (key == "level") level[name] = val;
        if (key == "help") { gsub(/\|/, "\\|", val); help[name] = val } }
      END { for (i = 1; i <= n; i++) { nm = order[i];
              printf "| `%s` | `%s` | %s | %s |\n", nm, value[nm], level[nm], help[nm] } }'
done
