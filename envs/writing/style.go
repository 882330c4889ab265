package writing

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
	"github.com/troupe-dev/troupe/envs/writing/internal/restyle"
)

// numHabits is the number of habit dimensions of a writer's style.
const numHabits = 8

// habitNames names the habit dimensions, in the order of the per-habit
// deviation flags in State.
var habitNames = [numHabits]string{"heading_style", "heading_case", "bullet", "emphasis", "strong", "code", "spelling", "person"}

// drawStyle draws each habit uniformly from its options.
func drawStyle(rng *rand.Rand) restyle.Style {
	bullets := []markdown.BulletMarker{markdown.BulletDash, markdown.BulletStar, markdown.BulletPlus}
	return restyle.Style{
		Heading:  pick(rng, markdown.HeadingATX, markdown.HeadingSetext),
		Case:     pick(rng, markdown.CaseSentence, markdown.CaseTitle),
		Bullet:   bullets[rng.IntN(3)],
		Emphasis: pick(rng, markdown.EmphasisStar, markdown.EmphasisUnderscore),
		Strong:   pick(rng, markdown.StrongStar, markdown.StrongUnderscore),
		Code:     pick(rng, markdown.CodeBacktick, markdown.CodeTilde),
		Spelling: pick(rng, markdown.SpellingUS, markdown.SpellingUK),
		Person:   pick(rng, markdown.PersonPlural, markdown.PersonSingular),
	}
}

func pick[T any](rng *rand.Rand, a, b T) T {
	if rng.IntN(2) == 0 {
		return a
	}
	return b
}

// only returns a style that sets habit d of s and leaves the rest alone.
func only(s restyle.Style, d int) restyle.Style {
	var o restyle.Style
	setHabit(&o, s, d)
	return o
}

// setHabit sets habit d (habitNames order) of dst to src's.
func setHabit(dst *restyle.Style, src restyle.Style, d int) {
	switch d {
	case 0:
		dst.Heading = src.Heading
	case 1:
		dst.Case = src.Case
	case 2:
		dst.Bullet = src.Bullet
	case 3:
		dst.Emphasis = src.Emphasis
	case 4:
		dst.Strong = src.Strong
	case 5:
		dst.Code = src.Code
	case 6:
		dst.Spelling = src.Spelling
	case 7:
		dst.Person = src.Person
	}
}

// mix returns a style that takes each habit from house with probability
// follow and from own otherwise: a writer who read the house style but
// slips back into its own habits now and then. It always draws eight
// numbers, in habit order.
func mix(house, own restyle.Style, follow float64, rng *rand.Rand) restyle.Style {
	s := house
	for d := 0; d < numHabits; d++ {
		if rng.Float64() >= follow {
			setHabit(&s, own, d)
		}
	}
	return s
}

// guide returns the house style guide as a writer reads it: the habits of
// s and the outline conventions.
func guide(s restyle.Style) string {
	var b strings.Builder
	b.WriteString("House style (follow it exactly in every unit you write or edit):\n")
	if s.Heading == markdown.HeadingSetext {
		b.WriteString("- Headings: setext for the title and sections (title underlined with ===, sections with ---); ATX (### Heading) for subsections.\n")
	} else {
		b.WriteString("- Headings: ATX only (# Title, ## Section, ### Subsection), no closing hashes.\n")
	}
	if s.Case == markdown.CaseTitle {
		b.WriteString("- Heading capitalization: Title Case (\"Rationale and Alternatives\").\n")
	} else {
		b.WriteString("- Heading capitalization: sentence case (\"Rationale and alternatives\").\n")
	}
	fmt.Fprintf(&b, "- Bulleted lists use %q as the marker.\n", s.Bullet.String())
	fmt.Fprintf(&b, "- Emphasis is written %sword%s; strong emphasis %sword%s.\n", s.Emphasis, s.Emphasis, s.Strong, s.Strong)
	if s.Code == markdown.CodeTilde {
		b.WriteString("- Code blocks are fenced with ~~~ (never ``` or indentation).\n")
	} else {
		b.WriteString("- Code blocks are fenced with ``` (never ~~~ or indentation).\n")
	}
	if s.Spelling == markdown.SpellingUK {
		b.WriteString("- Spelling: British (behaviour, initialise, optimisation, centre).\n")
	} else {
		b.WriteString("- Spelling: American (behavior, initialize, optimization, center).\n")
	}
	if s.Person == markdown.PersonSingular {
		b.WriteString("- The author writes in the first person singular (I, me, my), never \"we\".\n")
	} else {
		b.WriteString("- The authors write in the first person plural (we, us, our), never \"I\".\n")
	}
	b.WriteString("Outline conventions: exactly one H1, the document title, written only by the author of the Summary unit; ")
	b.WriteString("the template sections are H2 headings with their exact names, in template order (")
	b.WriteString(strings.Join(templateSections, ", "))
	b.WriteString("); subsections are H3 under their section; never skip a heading level; never leave a section empty.\n")
	return b.String()
}

// slipKind is a structure slip of a writer who has not read the outline
// conventions.
type slipKind uint8

const (
	slipNone   slipKind = iota
	slipRename          // a template section under another name
	slipLevel           // the unit's main heading one level too deep
)

// sectionSynonyms are plausible wrong names for the template sections
// (several come from the older RFC template).
var sectionSynonyms = [][]string{
	{"Abstract", "Overview"},
	{"Background", "Rationale"},
	{"Tutorial", "Explanation"},
	{"Detailed design", "Design"},
	{"Downsides", "Costs"},
	{"Alternatives", "Alternatives considered"},
	{"Related work", "Precedents"},
	{"Open questions", "Questions"},
	{"Future work", "Extensions"},
}

// render writes a unit's canonical source in style st. A structure slip
// changes the unit's first heading below the title: slipRename gives a
// template section another name (alt picks the synonym; a unit led by a
// subsection gets a level slip instead), slipLevel pushes it one level
// deeper.
func render(src string, st restyle.Style, slip slipKind, alt int) string {
	if slip != slipNone {
		src = slipHeading(src, slip, alt)
	}
	return restyle.Markdown(src, st)
}

func slipHeading(src string, slip slipKind, alt int) string {
	lines := strings.Split(src, "\n")
	var code markdown.Fence
	for i, ln := range lines {
		if code.Line(ln) {
			continue
		}
		lv, text, ok := atx(ln)
		if !ok || lv < 2 {
			continue
		}
		if k := sectionIndex(text); slip == slipRename && lv == 2 && k >= 0 {
			syn := sectionSynonyms[k]
			text = syn[alt%len(syn)]
		} else {
			lv++
		}
		lines[i] = strings.Repeat("#", lv) + " " + text
		break
	}
	return strings.Join(lines, "\n")
}

// deviations returns a bitmask of the habits (habitNames order) in which
// text departs from the house style: those whose restyling to the house
// variant changes the text.
func deviations(text string, house restyle.Style) uint16 {
	t := strings.TrimSpace(text)
	if strings.TrimSpace(restyle.Markdown(t, house)) == t {
		return 0
	}
	var m uint16
	for d := 0; d < numHabits; d++ {
		if strings.TrimSpace(restyle.Markdown(t, only(house, d))) != t {
			m |= 1 << d
		}
	}
	if m == 0 {
		m = 1 << numHabits // changed only as a whole (whitespace, say)
	}
	return m
}

// outline returns the headings of levels 1–3 of a Markdown text, outside
// code (ATX and setext).
func outline(text string) []OutlineHeading {
	var hs []OutlineHeading
	lines := strings.Split(text, "\n")
	var code markdown.Fence
	prevPara := false
	for i, ln := range lines {
		t := strings.TrimLeft(ln, " ")
		ind := len(ln) - len(t)
		if code.Line(ln) {
			prevPara = false
			continue
		}
		if strings.TrimSpace(t) == "" {
			prevPara = false
			continue
		}
		if lv, h, ok := atx(ln); ok {
			if lv <= 3 {
				hs = append(hs, OutlineHeading{lv, h})
			}
			prevPara = false
			continue
		}
		if prevPara && ind <= 3 {
			if lv := setextLevel(t); lv > 0 {
				hs = append(hs, OutlineHeading{lv, strings.TrimSpace(lines[i-1])})
				prevPara = false
				continue
			}
		}
		_, isList := bulletOrOrdered(t)
		prevPara = ind <= 3 && !isList && t[0] != '|' && t[0] != '>' && t[0] != '<'
	}
	return hs
}

func setextLevel(t string) int {
	t = strings.TrimRight(t, " \t")
	if len(t) == 0 || (t[0] != '=' && t[0] != '-') {
		return 0
	}
	for i := 1; i < len(t); i++ {
		if t[i] != t[0] {
			return 0
		}
	}
	if t[0] == '=' {
		return 1
	}
	return 2
}

// outlineOK reports whether a unit's headings of levels 1–3 are exactly
// the ones the outline prescribes for it: the same levels, and template
// sections under their own names (compared as the check compares them).
func outlineOK(text string, want []OutlineHeading) bool {
	got := outline(text)
	if len(got) != len(want) {
		return false
	}
	for i, h := range got {
		if h.Level != want[i].Level {
			return false
		}
		if k := sectionIndex(want[i].Text); want[i].Level == 2 && k >= 0 && sectionIndex(h.Text) != k {
			return false
		}
	}
	return true
}
