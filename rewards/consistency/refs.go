package consistency

import (
	"fmt"
	"regexp"
	"strings"
)

// crossReferences is the check "references to other sections point to
// headings that exist". It judges
//
//   - links to a fragment of this document ("[Guide-level
//     explanation](#guide-level-explanation)", and reference definitions
//     such as "[summary]: #summary"): the fragment must be the GitHub
//     anchor of a heading (lower case, punctuation dropped, spaces as
//     hyphens, "-1", "-2" … for repeated headings);
//   - sections named in prose: "the X section" with X capitalized, and
//     an emphasized or quoted name after "see", "in" or "under" ("as
//     described in *Motivation*") when it shares a word with a template
//     section name. X must name a heading, ignoring case, hyphens and a
//     plural "s"; naming a run of a heading's words is enough ("the
//     Alternatives section" for "Rationale and alternatives").
//
// Pass = valid / judged.
func crossReferences(d *parsed, links []link, text *prose, template []string, tr trace) CheckResult {
	anchors := map[string]bool{}
	var keys [][]string
	for _, hd := range d.headings {
		h := renderedText(hd.text)
		slug := githubSlug(h)
		a := slug
		for n := 1; anchors[a]; n++ {
			a = fmt.Sprintf("%s-%d", slug, n)
		}
		anchors[a] = true
		keys = append(keys, strings.Fields(headingKey(h)))
	}
	valid, judged := 0, 0
	var broken []string
	judge := func(ok bool, what string) {
		judged++
		if !ok {
			tr.add(checkCrossReferences, "bad", "%s", what)
		}
		if ok {
			valid++
		} else if len(broken) < 3 {
			broken = append(broken, what)
		}
	}
	for _, l := range links {
		if strings.HasPrefix(l.dest, "#") && len(l.dest) > 1 {
			judge(anchors[strings.ToLower(l.dest[1:])], l.dest)
		}
	}
	for _, label := range d.defOrder {
		if dest := d.defs[label]; strings.HasPrefix(dest, "#") && len(dest) > 1 {
			judge(anchors[strings.ToLower(dest[1:])], dest)
		}
	}
	names := map[string]bool{}
	for _, s := range template {
		for _, w := range strings.Fields(headingKey(s)) {
			if !minorWords[w] && w != "level" {
				names[w] = true
			}
		}
	}
	for _, b := range text.blocks {
		if !strings.Contains(b.plain, "section") {
			continue
		}
		for _, m := range sectionPhrase.FindAllStringSubmatch(b.plain, -1) {
			judge(namesHeading(m[1], keys), fmt.Sprintf("%q (line %d)", m[0], b.line))
		}
	}
	for _, b := range d.blocks {
		if b.kind == blockHeading || b.kind == blockQuote || !strings.ContainsAny(b.text, "*_\"“") || !mentionsAny(b.text, names) {
			continue
		}
		for _, m := range namedPhrase.FindAllStringSubmatch(b.text, -1) {
			name := m[2]
			shares := false
			for _, w := range strings.Fields(headingKey(name)) {
				shares = shares || names[w]
			}
			if shares {
				judge(namesHeading(name, keys), fmt.Sprintf("%q (line %d)", m[0], b.line))
			}
		}
	}
	pass := 1.0
	if judged > 0 {
		pass = float64(valid) / float64(judged)
	}
	detail := fmt.Sprintf("%d of %d reference(s) to sections resolve", valid, judged)
	if len(broken) > 0 {
		detail += "; broken: " + strings.Join(broken, ", ")
	}
	return CheckResult{Name: checkCrossReferences, Pass: pass, N: judged, Detail: detail}
}

var (
	// sectionPhrase is "the X section", X of one to five words, the first
	// capitalized, on plain text.
	sectionPhrase = regexp.MustCompile(`\b[Tt]he ((?:[A-Z][\w'-]*)(?: [\w'-]+){0,4}) sections?\b`)
	// namedPhrase is an emphasized or quoted name after "see", "in" or
	// "under", on inline Markdown.
	namedPhrase = regexp.MustCompile(`(?i)\b(see|in|under)(?: the)? (?:\*{1,2}|_{1,2}|"|“)([A-Za-z][^*_"”\n]{2,60})(?:\*{1,2}|_{1,2}|"|”)`)
)

// namesHeading reports whether a name is a heading or a run of a
// heading's words (or a heading is a run of the name's words).
func namesHeading(name string, keys [][]string) bool {
	n := strings.Fields(headingKey(name))
	if len(n) == 0 {
		return true
	}
	for _, k := range keys {
		if containsRun(k, n) || (len(k) > 0 && containsRun(n, k)) {
			return true
		}
	}
	return false
}

// containsRun reports whether run occurs contiguously in words, the last
// word compared without a plural "s".
func containsRun(words, run []string) bool {
	for i := 0; i+len(run) <= len(words); i++ {
		ok := true
		for j, w := range run {
			if v := words[i+j]; v != w && foldPlural(v) != foldPlural(w) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// githubSlug is the anchor GitHub gives a heading's plain text.
func githubSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && isLetterOrDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mentionsAny reports whether s contains one of the words, ignoring case.
func mentionsAny(s string, words map[string]bool) bool {
	l := strings.ToLower(s)
	for w := range words {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
