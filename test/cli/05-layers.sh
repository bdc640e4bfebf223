# 05-layers.sh - the include rule of lib/ (lib/README): scripts/check-layers
# prints one line per rule, "not ok" for each file that breaks it
sh "$EMB_TOP/scripts/check-layers"
# the checker itself catches a breach: a copy of the tree's lib/ with
# an upward include added
T=$(t_tmpdir 05-layers)
mkdir -p "$T/scripts" "$T/cmd"
cp -R "$EMB_TOP/lib" "$T/lib"
mkdir -p "$T/bench" && cp "$EMB_TOP"/bench/*.c "$T/bench/"
cp "$EMB_TOP/scripts/check-layers" "$T/scripts/"
printf '#include "nn/nn.h"\n' >> "$T/lib/tok/text.c"
printf 'static void f(void) { abort(); }\n' >> "$T/lib/io/hub.c"
# a benchmark with a header from before the layers, one that is private
# to its layer, and one that is not there
printf '#include "kernels.h"\n#include "nn/nn-internal.h"\n#include "kern/gone.h"\n' >> "$T/bench/gemm-bench.c"
# a private header that is not named -internal.h (its comment says so),
# included from another folder; a header claiming another folder
printf '#include "tok/vocab.h"\n' >> "$T/lib/st/pool.c"
printf '/*\n * claim.h - private to lib/nn/\n */\n' > "$T/lib/kern/claim.h"
sh "$T/scripts/check-layers" > "$T/out" 2>&1; s=$?
t_eq "an upward include fails the check" "$s" 1
t_grep "... names the file and the header" 'lib/tok/text.c:[0-9]*: layer tok includes nn/nn.h' "$T/out"
t_grep "... and an abort below tool/" 'abort.*lib/io/hub.c' "$T/out"
t_grep "a stale include in bench/ fails it" "bench/gemm-bench.c:[0-9]*: 'kernels.h' without its layer folder" "$T/out"
t_grep "... a private one" 'bench/gemm-bench.c:[0-9]*: nn/nn-internal.h is private to lib/nn/' "$T/out"
t_grep "... a header private by its comment" 'lib/st/pool.c:[0-9]*: tok/vocab.h is private to lib/tok/' "$T/out"
t_grep "... one claiming another folder" 'lib/kern/claim.h: says it is private to lib/nn/, but lies in lib/kern/' "$T/out"
t_grep "... and a missing one" 'bench/gemm-bench.c:[0-9]*: lib/kern/gone.h does not exist' "$T/out"
t_nogrep "the white-box benchmarks may use tok/tok-internal.h" 'bench/pretok-regex.c\|bench/unicode-cmp.c' "$T/out"
