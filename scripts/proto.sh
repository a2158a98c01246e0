#!/usr/bin/env bash
# Regenerate the Go code of the .proto files under proto/ with buf and the
# plugins pinned in tools/go.mod (offline), and lint them.
#   scripts/proto.sh          regenerate in place
#   scripts/proto.sh --check  lint, regenerate into a temporary directory and fail
#                             when the committed generated code is stale
set -euo pipefail
cd "$(dirname "$0")/.."

BUF=(go tool -modfile=tools/go.mod buf)

"${BUF[@]}" lint

if [[ "${1:-}" != "--check" ]]; then
	"${BUF[@]}" generate
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Same template, output redirected into the temporary directory.
sed "s#out: proto#out: $tmp#" buf.gen.yaml >"$tmp/buf.gen.yaml"
"${BUF[@]}" generate --template "$tmp/buf.gen.yaml"
stale=0
while IFS= read -r f; do
	rel=${f#"$tmp"/}
	if ! cmp -s "$f" "proto/$rel"; then
		echo "stale generated code: proto/$rel (run make proto)" >&2
		stale=1
	fi
done < <(find "$tmp" -name '*.pb.go' -o -name '*.pb.gw.go' -o -name '*.swagger.json')
while IFS= read -r f; do
	rel=${f#proto/}
	if [[ ! -f "$tmp/$rel" ]]; then
		echo "generated file without a source: $f (run make proto)" >&2
		stale=1
	fi
done < <(find proto -name '*.pb.go' -o -name '*.pb.gw.go' -o -name '*.swagger.json')
exit $stale
