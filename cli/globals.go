package cli

import "strings"

// globalFlags are the flags every command takes (runCommand declares them),
// each followed by a value unless written --name=value.
var globalFlags = []string{"addr", "admin-key", "o", "tls-ca", "tls-cert", "tls-key"}

// hoistGlobalFlags moves global flags written before the noun or between the
// noun and the verb (`tollgate --addr A key list`, `tollgate key -o json list`)
// to just after the verb, where the command's flag set parses them. Flags after
// the verb are left where they are.
func hoistGlobalFlags(args []string) []string {
	var globals, words []string
	for i := 0; i < len(args); i++ {
		if len(words) == 2 {
			return append(append(words, globals...), args[i:]...)
		}
		a := args[i]
		name, hasValue := globalFlag(a)
		if name == "" {
			words = append(words, a)
			continue
		}
		globals = append(globals, a)
		if !hasValue && i+1 < len(args) {
			i++
			globals = append(globals, args[i])
		}
	}
	return append(words, globals...)
}

// globalFlag returns the name of the global flag a is (-name, --name,
// -name=value or --name=value) and whether a carries its value; "" when a is
// not a global flag.
func globalFlag(a string) (string, bool) {
	if !strings.HasPrefix(a, "-") {
		return "", false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	name, _, hasValue := strings.Cut(name, "=")
	for _, g := range globalFlags {
		if name == g {
			return name, hasValue
		}
	}
	return "", false
}
