package markdown

import "testing"

func TestEmphasisDetection(t *testing.T) {
	cases := []struct {
		in                 string
		emS, emU, stS, stU int
	}{
		{"a *b* c", 1, 0, 0, 0},
		{"a _b_ c", 0, 1, 0, 0},
		{"snake_case_name and foo_bar", 0, 0, 0, 0},
		{"a **b** and __c__", 0, 0, 1, 1},
		{"2 * 3 * 4", 0, 0, 0, 0},
		{"***both***", 1, 0, 1, 0},
		{"`*code*` and \\*escaped\\*", 0, 0, 0, 0},
		{"see [the *docs*](https://x.org/a_b_c)", 1, 0, 0, 0},
	}
	for _, c := range cases {
		var st InlineStats
		var p Stripper
		p.Plain(c.in, &st)
		if st.EmStar != c.emS || st.EmUnderscore != c.emU || st.StrongStar != c.stS || st.StrongUnderscore != c.stU {
			t.Errorf("%q: got em */_ %d/%d strong %d/%d, want %d/%d %d/%d", c.in,
				st.EmStar, st.EmUnderscore, st.StrongStar, st.StrongUnderscore, c.emS, c.emU, c.stS, c.stU)
		}
		// EmphasisSpans finds the same spans on the masked text.
		em, strong := 0, 0
		for _, m := range p.EmphasisSpans(Mask(c.in)) {
			if m.N == 1 {
				em++
			} else {
				strong++
			}
		}
		if em != c.emS+c.emU || strong != c.stS+c.stU {
			t.Errorf("%q: EmphasisSpans found %d emphasis and %d strong spans", c.in, em, strong)
		}
	}
}
