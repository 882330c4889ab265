package consistency

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var allStyles = struct {
	h []HeadingStyle
	c []HeadingCase
	b []BulletMarker
	e, s []EmphasisMarker
	code []CodeStyle
	sp []Spelling
	p []Person
}{
	[]HeadingStyle{HeadingATX, HeadingSetext},
	[]HeadingCase{CaseSentence, CaseTitle},
	[]BulletMarker{BulletDash, BulletStar, BulletPlus},
	[]EmphasisMarker{EmphasisStar, EmphasisUnderscore},
	[]EmphasisMarker{StrongStar, StrongUnderscore},
	[]CodeStyle{CodeBacktick, CodeTilde},
	[]Spelling{SpellingUS, SpellingUK},
	[]Person{PersonPlural, PersonSingular},
}

func styleK(k int) Style {
	a := allStyles
	return Style{a.h[k%2], a.c[k%2], a.b[k%3], a.e[k%2], a.s[(k/2)%2], a.code[(k/2+k)%2], a.sp[(k+1)/2%2], a.p[k%2]}
}

func styleRand(r *rand.Rand) Style {
	a := allStyles
	return Style{a.h[r.IntN(2)], a.c[r.IntN(2)], a.b[r.IntN(3)], a.e[r.IntN(2)], a.s[r.IntN(2)], a.code[r.IntN(2)], a.sp[r.IntN(2)], a.p[r.IntN(2)]}
}

// splitH2 splits md at H2 headings (outside code).
func splitH2(md string) []string {
	d := parse(md, func(string) bool { return false })
	lines := splitLines(md)
	var parts []string
	start := 0
	for i, li := range d.lines {
		if li.kind == lkATX && li.level <= 2 && i > 0 {
			parts = append(parts, strings.Join(lines[start:i], "\n")+"\n")
			start = i
		}
	}
	parts = append(parts, strings.Join(lines[start:], "\n")+"\n")
	return parts
}

func mixDoc(md string, styles []Style, title string) string {
	parts := splitH2(md)
	var sb strings.Builder
	sb.WriteString(Restyle("# "+title+"\n\n", styles[0]))
	for i, p := range parts {
		sb.WriteString(Restyle(p, styles[i%len(styles)]))
		sb.WriteString("\n")
	}
	return sb.String()
}

func TestScratchMix(t *testing.T) {
	if os.Getenv("MIX") == "" {
		t.Skip()
	}
	files, _ := filepath.Glob("/work/main/envs/writing/corpus/[0-9]*.md")
	var single, house, mixK, mixR []float64
	per := map[string]float64{}
	for fi, f := range files {
		b, _ := os.ReadFile(f)
		md := string(b)
		title := "RFC " + strings.TrimSuffix(filepath.Base(f), ".md")
		r := rand.New(rand.NewPCG(uint64(fi), 7))
		one := styleRand(r)
		s1 := Check([]byte(mixDoc(md, []Style{one}, title)))
		single = append(single, s1.Score)
		h := Check([]byte(mixDoc(md, []Style{styleK(0)}, title)))
		house = append(house, h.Score)
		if h.Score < 0.9 {
			fmt.Println("house", filepath.Base(f), h)
		}
		mk := Check([]byte(mixDoc(md, []Style{styleK(0), styleK(1), styleK(2), styleK(3)}, title)))
		mixK = append(mixK, mk.Score)
		if mk.Score > 0.8 {
			fmt.Println("mixK", filepath.Base(f), mk)
		}
		rs := []Style{styleRand(r), styleRand(r), styleRand(r), styleRand(r)}
		mr := Check([]byte(mixDoc(md, rs, title)))
		mixR = append(mixR, mr.Score)
		for _, c := range mr.Checks {
			per[c.Name] += c.Pass / float64(len(files))
		}
		if os.Getenv("MIX") == "v" && s1.Score < 0.97 {
			fmt.Println("single", filepath.Base(f), s1)
		}
		if os.Getenv("MIX") == "m" {
			fmt.Println("mix", filepath.Base(f), mr)
		}
	}
	for _, x := range []struct {
		n string
		v []float64
	}{{"single", single}, {"house", house}, {"mix-distinct", mixK}, {"mix-random", mixR}} {
		sort.Float64s(x.v)
		m := 0.0
		for _, y := range x.v {
			m += y
		}
		fmt.Printf("%-13s min %.3f med %.3f mean %.3f max %.3f\n", x.n, x.v[0], x.v[len(x.v)/2], m/float64(len(x.v)), x.v[len(x.v)-1])
	}
	fmt.Println(per)
}
