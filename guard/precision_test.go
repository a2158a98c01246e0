package guard

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var printFigures = flag.Bool("figures", false, "print the precision table (docs/guardrails.md)")

type fixture struct {
	label string
	text  []byte
}

func loadFixtures(t testing.TB) []fixture {
	f, err := os.Open("testdata/fixtures.tsv")
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []fixture
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		label, text, ok := strings.Cut(line, "\t")
		require.True(t, ok, "fixture without a tab: %q", line)
		out = append(out, fixture{label, []byte(strings.ReplaceAll(text, `\n`, "\n"))})
	}
	require.NoError(t, sc.Err())
	return out
}

// floors: the least precision and recall each type must keep on the
// fixtures. Raise them when the checks improve; never lower them to pass.
var floors = map[string][2]float64{
	TypeEmail: {0.9, 1}, TypePhone: {0.9, 0.9}, TypeCreditCard: {1, 1}, TypeIBAN: {1, 1},
	TypeSSN: {1, 1}, TypeIP: {0.9, 1}, TypeAPIKey: {1, 1}, TypeAWSKey: {1, 1},
	TypePrivateKey: {1, 1}, TypeJWT: {1, 1}, TypeHighEntropy: {0.85, 1},
}

// TestPrecision measures every built-in type on the labelled fixtures: a
// fixture labelled T is a true positive when T is found in it (after
// overlapping matches are resolved as redaction resolves them), a false
// negative otherwise; any other fixture where T is found is a false
// positive.
func TestPrecision(t *testing.T) {
	fx := loadFixtures(t)
	all := append(slices.Clone(piiDetectors), secretDetectors...)
	tp, fp, fn := map[string]int{}, map[string]int{}, map[string]int{}
	for _, f := range fx {
		var found []string
		for _, kind := range []typedFinder{piiDetectors, secretDetectors} {
			found = append(found, types(normalize(kind.find(f.text, nil)))...)
		}
		for _, d := range all {
			got := slices.Contains(found, d.typ)
			switch {
			case got && f.label == d.typ:
				tp[d.typ]++
			case got:
				fp[d.typ]++
				t.Logf("false positive %s in %q", d.typ, f.text)
			case f.label == d.typ:
				fn[d.typ]++
				t.Logf("missed %s in %q", d.typ, f.text)
			}
		}
	}
	var rows []string
	for _, d := range all {
		typ := d.typ
		p := ratio(tp[typ], tp[typ]+fp[typ])
		r := ratio(tp[typ], tp[typ]+fn[typ])
		rows = append(rows, fmt.Sprintf("| `%s` | %d | %d | %d | %.2f | %.2f |", typ, tp[typ], fp[typ], fn[typ], p, r))
		fl := floors[typ]
		require.GreaterOrEqual(t, p, fl[0], "precision of %s", typ)
		require.GreaterOrEqual(t, r, fl[1], "recall of %s", typ)
		require.Positive(t, tp[typ], "no positive fixture of %s", typ)
	}
	sort.Strings(rows)
	if *printFigures {
		fmt.Printf("%d fixtures\n| type | TP | FP | FN | precision | recall |\n|---|---|---|---|---|---|\n%s\n", len(fx), strings.Join(rows, "\n"))
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
