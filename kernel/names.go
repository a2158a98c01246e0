package kernel

import (
	"slices"
	"strconv"
)

// Names of the enumerations, as written in JSON documents and CLI output.
var (
	scopeKindNames  = [...]string{ScopeGlobal: "global", ScopeOrg: "org", ScopeTeam: "team", ScopeUser: "user", ScopeCustomer: "customer", ScopeKey: "key", ScopeDeployment: "deployment", ScopeRun: "run", ScopeTag: "tag"}
	periodKindNames = [...]string{PeriodTotal: "total", PeriodDaily: "daily", PeriodWeekly: "weekly", PeriodMonthly: "monthly", PeriodRolling: "rolling"}
	modeNames       = [...]string{Strict: "strict", Estimate: "estimate"}
	shortfallNames  = [...]string{Clamp: "clamp", Reject: "reject"}
	reasonNames     = [...]string{
		ReasonOK: "ok", ReasonKeyExpired: "key_expired", ReasonModelNotAllowed: "model_not_allowed",
		ReasonRequestLimit: "request_limit", ReasonTokenLimit: "token_limit", ReasonParallelLimit: "parallel_limit",
		ReasonBudgetExceeded: "budget_exceeded", ReasonDuplicate: "duplicate",
		ReasonUnpriced: "unpriced",
	}
	statusNames = [...]string{StatusCompleted: "completed", StatusAborted: "aborted", StatusFailed: "failed", StatusExpired: "expired", StatusRefused: "refused"}
)

// enumName is names[v], or "name(v)" for a value without a name.
func enumName[T ~uint8](names []string, v T, kind string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return kind + "(" + strconv.Itoa(int(v)) + ")"
}

// parseEnum finds s among names.
func parseEnum[T ~uint8](names []string, s string) (T, error) {
	if i := slices.Index(names, s); i >= 0 {
		return T(i), nil
	}
	return 0, &parseError{err: ErrBadEnum, text: s}
}

// unmarshalEnumJSON reads a JSON string name or, for old documents, a number.
func unmarshalEnumJSON[T ~uint8](names []string, data []byte) (T, error) {
	if len(data) > 0 && data[0] == '"' {
		s, err := strconv.Unquote(string(data))
		if err != nil {
			return 0, &parseError{err: ErrBadEnum, text: string(data)}
		}
		return parseEnum[T](names, s)
	}
	n, err := strconv.ParseUint(string(data), 10, 8)
	if err != nil || n >= uint64(len(names)) {
		return 0, &parseError{err: ErrBadEnum, text: string(data)}
	}
	return T(n), nil
}

func (k ScopeKind) String() string { return enumName(scopeKindNames[:], k, "ScopeKind") }

// ParseScopeKind reads "global", "org", "team", "user", "customer", "key", "run" or "tag".
func ParseScopeKind(s string) (ScopeKind, error) { return parseEnum[ScopeKind](scopeKindNames[:], s) }

// MarshalText writes the kind's name.
func (k ScopeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (k *ScopeKind) UnmarshalText(b []byte) (err error) {
	*k, err = ParseScopeKind(string(b))
	return err
}

// UnmarshalJSON reads the name, or the number of older documents.
func (k *ScopeKind) UnmarshalJSON(b []byte) (err error) {
	*k, err = unmarshalEnumJSON[ScopeKind](scopeKindNames[:], b)
	return err
}

// String is "key:k1", or "global" for the global scope.
func (r ScopeRef) String() string {
	if r.ID == "" {
		return r.Kind.String()
	}
	return r.Kind.String() + ":" + r.ID
}

func (k PeriodKind) String() string { return enumName(periodKindNames[:], k, "PeriodKind") }

// ParsePeriodKind reads "total", "daily", "weekly", "monthly" or "rolling".
func ParsePeriodKind(s string) (PeriodKind, error) {
	return parseEnum[PeriodKind](periodKindNames[:], s)
}

// MarshalText writes the kind's name.
func (k PeriodKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (k *PeriodKind) UnmarshalText(b []byte) (err error) {
	*k, err = ParsePeriodKind(string(b))
	return err
}

// UnmarshalJSON reads the name, or the number of older documents.
func (k *PeriodKind) UnmarshalJSON(b []byte) (err error) {
	*k, err = unmarshalEnumJSON[PeriodKind](periodKindNames[:], b)
	return err
}

func (m BudgetMode) String() string { return enumName(modeNames[:], m, "BudgetMode") }

// ParseBudgetMode reads "strict" or "estimate".
func ParseBudgetMode(s string) (BudgetMode, error) { return parseEnum[BudgetMode](modeNames[:], s) }

// MarshalText writes the mode's name.
func (m BudgetMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (m *BudgetMode) UnmarshalText(b []byte) (err error) {
	*m, err = ParseBudgetMode(string(b))
	return err
}

// UnmarshalJSON reads the name, or the number of older documents.
func (m *BudgetMode) UnmarshalJSON(b []byte) (err error) {
	*m, err = unmarshalEnumJSON[BudgetMode](modeNames[:], b)
	return err
}

func (s Shortfall) String() string { return enumName(shortfallNames[:], s, "Shortfall") }

// ParseShortfall reads "clamp" or "reject".
func ParseShortfall(s string) (Shortfall, error) { return parseEnum[Shortfall](shortfallNames[:], s) }

// MarshalText writes the policy's name.
func (s Shortfall) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (s *Shortfall) UnmarshalText(b []byte) (err error) {
	*s, err = ParseShortfall(string(b))
	return err
}

// UnmarshalJSON reads the name, or the number of older documents.
func (s *Shortfall) UnmarshalJSON(b []byte) (err error) {
	*s, err = unmarshalEnumJSON[Shortfall](shortfallNames[:], b)
	return err
}

// String is the reason in snake case, e.g. "budget_exceeded".
func (r Reason) String() string { return enumName(reasonNames[:], r, "Reason") }

// String is "completed", "aborted", "failed", "expired" or "refused".
func (s Status) String() string { return enumName(statusNames[:], s, "Status") }

// Noun names the scope in a refusal's message, "Budget exceeded for the
// <noun>": "key", "team", "tag feature=search", and "gateway" for the rest.
func (r ScopeRef) Noun() string {
	switch r.Kind {
	case ScopeKey:
		return "key"
	case ScopeUser:
		return "user"
	case ScopeTeam:
		return "team"
	case ScopeOrg:
		return "organization"
	case ScopeCustomer:
		return "customer"
	case ScopeRun:
		return "run"
	case ScopeTag:
		return "tag " + r.ID
	default:
		return "gateway"
	}
}
