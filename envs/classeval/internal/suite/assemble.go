package suite

import "strings"

// An Impl is one implementation of a method for [Class.Assemble]: its
// source at class-member indentation, and the imports and helper methods
// it needs. The zero Impl keeps the method's stub.
type Impl struct {
	Source  string
	Imports []string
	Helpers []string
}

// CanonicalImpls returns the canonical implementation of every method of
// c (methods_info[].solution_code, normalized), to check the harness.
func (c *Class) CanonicalImpls() []Impl {
	out := make([]Impl, len(c.Methods))
	for i, m := range c.Methods {
		x := parseReply(m.Canonical).extract(c, m, false)
		out[i] = Impl{Source: x.Source}
	}
	return out
}

// Assemble returns the module text of c with impls[i] implementing
// c.Methods[i] (missing or zero entries keep the stub: the method's
// signature and `pass`). In order: the dataset's imports, the
// implementations' imports (each once, in method order), the class line,
// the constructor's body, every method, then the helpers the
// implementations brought (each name once; the first wins). The
// constructor is always the dataset's: a method taken from a whole-class
// sample that relies on fields its own __init__ set differently fails, as
// it would if a teammate's class were merged by hand. Assemble is
// deterministic.
func (c *Class) Assemble(impls []Impl) string {
	var b strings.Builder
	seen := map[string]bool{}
	addImport := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			b.WriteString(s + "\n")
		}
	}
	for _, s := range c.Imports {
		addImport(s)
	}
	for i := range c.Methods {
		if i < len(impls) && impls[i].Source != "" {
			for _, s := range impls[i].Imports {
				addImport(s)
			}
		}
	}
	b.WriteString("\n\nclass " + c.Name + ":\n")
	ctor := strings.Split(strings.TrimRight(normalizeText(strings.TrimLeft(c.Constructor, "\n")), "\n "), "\n")
	body := false
	for _, l := range ctor[1:] {
		if strings.TrimSpace(l) != "" {
			body = true
		}
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	if !body && len(c.Methods) == 0 {
		b.WriteString("    pass\n")
	}
	helperSeen := map[string]bool{}
	var helpers []string
	for i, m := range c.Methods {
		b.WriteString("\n")
		if i < len(impls) && impls[i].Source != "" {
			b.WriteString(impls[i].Source + "\n")
			for _, h := range impls[i].Helpers {
				if name := defName(h); name != "" && !helperSeen[name] {
					helperSeen[name] = true
					helpers = append(helpers, h)
				}
			}
		} else {
			b.WriteString(stub(m) + "\n")
		}
	}
	for _, h := range helpers {
		b.WriteString("\n" + h + "\n")
	}
	return b.String()
}

// defName returns the name of the first def in src.
func defName(src string) string {
	for _, l := range strings.Split(src, "\n") {
		if m := anyDefRe.FindStringSubmatch(l); m != nil {
			return m[2]
		}
	}
	return ""
}
