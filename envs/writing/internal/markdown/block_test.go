package markdown

import "testing"

// The fence follower opens a block as CommonMark does (at most 3 spaces
// before the fence), closes it with the same character at least as many
// times, and reports every line of the block, fences included.
func TestFence(t *testing.T) {
	lines := []string{
		"prose",
		"   ```rust", // opens (3 spaces)
		"# not a heading",
		"~~~",     // another character: inside
		"``",      // too short: inside
		"````",    // closes
		"    ```", // 4 spaces: indented code, not a fence
		"## heading",
		"~~~~",
		"```",
		"~~~~~ ",
	}
	want := []bool{false, true, true, true, true, true, false, false, true, true, true}
	var code Fence
	for i, ln := range lines {
		if got := code.Line(ln); got != want[i] {
			t.Errorf("line %d %q: in code %v, want %v", i, ln, got, want[i])
		}
	}
	if code.Open() {
		t.Error("the last fence did not close the block")
	}
}
