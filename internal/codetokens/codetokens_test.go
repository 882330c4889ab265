package codetokens

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"x", 1},
		{"abcdef", 1},                         // one token per 6 name characters
		{"abcdefg", 2},                        // rounded up
		{"snake_case_9", 2},                   // underscores and digits are name characters
		{"a b", 2},                            // a single space merges with what follows
		{"a    b", 3},                         // a run of 4 spaces costs one
		{"a\n        b", 3},                   // a newline with its indentation costs one
		{"a ", 2},                             // a trailing space costs one
		{"(", 1},                              // other characters: one per 2
		{"()", 1},                             //
		{"():", 2},                            //
		{"def f(x):\n    return x + 1\n", 11}, // def·f·(·x·):·↵····return·x·+·1·↵
		{"é", 1},                              // bytes above 0x7f count as name characters
	} {
		if got := Count(c.s); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestCountIsAdditiveAcrossSeparatedLines(t *testing.T) {
	// A newline ends every run, so lines after the first add their own
	// count plus one for the newline and its indentation.
	a, b := "total = sum(values)", "return total / len(values)"
	if got, want := Count(a+"\n    "+b), Count(a)+1+Count(b); got != want {
		t.Fatalf("Count of two lines = %d, want %d", got, want)
	}
}
