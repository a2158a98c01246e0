#!/usr/bin/env bash
# Checks the Coq proofs of formal/coq: compiles every file (in a scratch copy,
# so the tree stays clean), refuses Admitted/admit/axioms in the sources, and
# prints the assumptions of every Theorem and Corollary (and so of every lemma
# they use), failing unless each is closed under the global context (no axiom
# at all, not even one of the standard library's). Needs coqc (Debian coq).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/coq
# Dependency order.
files=(Kernel Cost State Ledger Admin Trace)

if ! command -v coqc >/dev/null 2>&1; then
  echo "check-coq: coqc not found: install the Debian package coq (make test does)" >&2
  exit 1
fi

# (Print Assumptions below is the real guard: an Admitted statement or an
# axiom shows there; this only names the culprit early.)
bad=$(grep -nE '(^|[[:space:]])(Admitted|Abort)\.|\b(admit|give_up)\b|^[[:space:]]*(Axiom|Axioms|Parameter|Parameters|Hypothesis|Hypotheses|Variable|Variables|Conjecture|Context)\b' "$src"/*.v || true)
if [ -n "$bad" ]; then
  echo "check-coq: unproved statements or axioms in the sources:" >&2
  echo "$bad" >&2
  exit 1
fi

work=$(mktemp -d /tmp/tollgate-coq.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$src"/*.v "$work"/
cd "$work"
for f in "${files[@]}"; do
  coqc -q -Q . Tollgate "$f.v"
done

# One Print Assumptions per theorem (lemmas are covered through the theorems
# that use them; an unused lemma proves nothing claimed).
n=0
: >Assumptions.v
for f in "${files[@]}"; do
  echo "Require Tollgate.$f." >>Assumptions.v
  for name in $(sed -nE 's/^(Theorem|Corollary)[[:space:]]+([A-Za-z0-9_'"'"']+).*/\2/p' "$f.v"); do
    echo "Print Assumptions Tollgate.$f.$name." >>Assumptions.v
    n=$((n + 1))
  done
done
out=$(coqc -q -Q . Tollgate Assumptions.v)
closed=$(grep -c '^Closed under the global context$' <<<"$out" || true)
if [ "$closed" -ne "$n" ]; then
  echo "check-coq: only $closed of $n theorems are closed under the global context:" >&2
  echo "$out" >&2
  exit 1
fi
echo "check-coq: ${#files[@]} files compiled, $n theorems closed under the global context"
