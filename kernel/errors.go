package kernel

import "errors"

// Errors of the kernel's parsers and validation; test with errors.Is.
var (
	// ErrBadAmount: the text is not a non-negative dollar amount with at most 9 decimals.
	ErrBadAmount = errors.New("kernel: invalid dollar amount")
	// ErrBadPeriod: the text or JSON is not a period.
	ErrBadPeriod = errors.New("kernel: invalid period")
	// ErrBadEnum: the text is not one of the names of an enumeration.
	ErrBadEnum = errors.New("kernel: invalid name")
	// ErrBadLimits: limits that admission cannot apply as meant.
	ErrBadLimits = errors.New("kernel: invalid limits")
	// ErrBadTag: a tag or a list of tags that is not name=value, or too many.
	ErrBadTag = errors.New("kernel: invalid tag")
)
