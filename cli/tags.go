package cli

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// Tags: tag budgets, a key's default tags (--tags) and spend by tag.

func init() {
	register(
		&command{noun: "tag-budget", verb: "set", args: "TAG", help: "set the limits of a tag name=value (--budget 10/monthly, --rpm …)", setup: tagBudgetSet},
		&command{noun: "tag-budget", verb: "list", help: "list the tags that have limits", setup: tagBudgetList},
		&command{noun: "tag-budget", verb: "delete", args: "TAG", help: "remove a tag's limits (its spend stays in the ledger)", setup: tagBudgetDelete},
		&command{noun: "spend", verb: "by", help: "spend grouped by --group key|team|user|org|customer|model|run|tag|tag:NAME", setup: spendBy},
	)
}

// tagsMap reads --tags "name=value,name=value" (the server checks the
// syntax); "" is no tags.
func tagsMap(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return nil, fmt.Errorf("%w: --tags: %q is not name=value", ErrUsage, p)
		}
		out[name] = value
	}
	return out, nil
}

func tagBudgetSet(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		resp, err := adminv1.NewTagServiceClient(r.conn).SetTagBudget(r.ctx, &adminv1.SetTagBudgetRequest{TagBudget: &adminv1.TagBudget{Tag: pos[0], Limits: l}})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			r.fields(append([][2]string{{"TAG", resp.GetTagBudget().GetTag()}}, limitsFields(resp.GetTagBudget().GetLimits())...))
		})
	}
}

func tagBudgetList(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewTagServiceClient(r.conn).ListTagBudgets(r.ctx, &adminv1.ListTagBudgetsRequest{})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			rows := make([][]string, 0, len(resp.GetTagBudgets()))
			for _, t := range resp.GetTagBudgets() {
				rows = append(rows, append([]string{t.GetTag()}, limitsRow(t.GetLimits())...))
			}
			r.table(append([]string{"TAG"}, limitsHeader...), rows)
		})
	}
}

func tagBudgetDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewTagServiceClient(r.conn).DeleteTagBudget(r.ctx, &adminv1.DeleteTagBudgetRequest{Tag: pos[0]})
		return deleted(r, "tag budget", pos[0], err)
	}
}

// spendBy is the total of every group over a time range, largest first.
func spendBy(fs *flag.FlagSet) func(*runner, []string) error {
	var rf rangeFlags
	rf.register(fs)
	group := fs.String("group", "tag", "key, team, user, org, customer, model, run (every run), tag (every name=value) or tag:NAME (the values of one tag)")
	return func(r *runner, _ []string) error {
		resp, err := rf.breakdown(r, *group)
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			groups := resp.GetGroups()
			sort.SliceStable(groups, func(i, j int) bool { return groups[i].GetTotal().GetNanoUsd() > groups[j].GetTotal().GetNanoUsd() })
			rows := make([][]string, 0, len(groups))
			for _, g := range groups {
				rows = append(rows, []string{g.GetId(), usd(g.GetTotal()), fmt.Sprint(g.GetRequests()), fmt.Sprint(g.GetTokens())})
			}
			r.table([]string{strings.ToUpper(*group), "SPEND", "REQUESTS", "TOKENS"}, rows)
		})
	}
}
