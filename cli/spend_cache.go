package cli

import (
	"flag"
	"fmt"
	"strings"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// tollgate spend cache: the response cache's hits, misses and savings per
// key, team or model (docs/caching.md).

func init() {
	register(&command{noun: "spend", verb: "cache", help: "response cache hits, misses, hit rate and savings per model (--by key|team|model)", setup: spendCache})
}

func spendCache(fs *flag.FlagSet) func(*runner, []string) error {
	by := fs.String("by", "model", "group by key, team or model")
	var rf rangeFlags
	rf.register(fs)
	return func(r *runner, _ []string) error {
		switch *by {
		case "key", "team", "model":
		default:
			return fmt.Errorf("%w: --by: %q is not key, team or model", ErrUsage, *by)
		}
		resp, err := rf.breakdown(r, *by)
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			var rows [][]string
			for _, g := range resp.GetGroups() {
				c := g.GetCache()
				if c == nil {
					continue // not a cached group
				}
				rows = append(rows, []string{
					g.GetId(), fmt.Sprint(g.GetRequests()), fmt.Sprint(c.GetHits()), fmt.Sprint(c.GetMisses()),
					hitRate(c), usd(c.GetSaved()), usd(g.GetTotal()),
				})
			}
			r.table([]string{strings.ToUpper(*by), "REQUESTS", "HITS", "MISSES", "HIT RATE", "SAVED", "SPEND"}, rows)
		})
	}
}

// hitRate is hits / (hits + misses) as a percentage ("-" with neither).
func hitRate(c *adminv1.CacheCounts) string {
	n := c.GetHits() + c.GetMisses()
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(c.GetHits())/float64(n))
}
