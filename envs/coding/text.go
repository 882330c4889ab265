package coding

import (
	"regexp"
	"strings"
)

// fenceRE matches a Markdown code block: ```lang\n … ```.
var fenceRE = regexp.MustCompile("(?s)```[ \\t]*([A-Za-z0-9_+-]*)[ \\t]*\\r?\\n(.*?)```")

// noChanges is what a reviewer answers when it finds nothing to fix.
const noChanges = "NO_CHANGES"

// extractCompletion turns an LLM's answer into the completion that follows
// a task's prompt, robustly:
//
//   - If the text holds Markdown code blocks, the first one that defines
//     entry_point is used, else the longest block; otherwise the whole text.
//   - Code that defines `def entry_point(` at the left margin is a complete
//     function (perhaps with imports and helpers): it is appended after the
//     prompt, whose stub it redefines.
//   - Code whose first line is indented is a body and follows the prompt
//     as is.
//   - Anything else is taken as a body that lost its indentation and is
//     indented by four spaces.
//
// ok is false when the text holds no code at all (empty, or the reviewer's
// NO_CHANGES).
func extractCompletion(text, entryPoint string) (completion string, ok bool) {
	code := text
	if blocks := fenceRE.FindAllStringSubmatch(text, -1); len(blocks) > 0 {
		best := ""
		for _, b := range blocks {
			if definesAtMargin(b[2], entryPoint) {
				best = b[2]
				break
			}
			if len(b[2]) > len(best) {
				best = b[2]
			}
		}
		code = best
	} else if strings.Contains(text, "```") {
		// An unterminated block: take what follows the opening fence.
		_, after, _ := strings.Cut(text, "```")
		if nl := strings.IndexByte(after, '\n'); nl >= 0 {
			after = after[nl+1:]
		}
		code = after
	}
	code = strings.ReplaceAll(code, "\r\n", "\n")
	code = strings.ReplaceAll(code, "\t", "    ")
	trimmed := strings.TrimSpace(code)
	if trimmed == "" || trimmed == noChanges || trimmed == "DONE" {
		return "", false
	}
	// Drop leading blank lines; keep the first line's indentation.
	for strings.HasPrefix(code, "\n") || strings.HasPrefix(strings.TrimLeft(code, " "), "\n") {
		_, code, _ = strings.Cut(code, "\n")
	}
	code = strings.TrimRight(code, " \n") + "\n"
	switch {
	case definesAtMargin(code, entryPoint):
		return "\n" + code, true
	case code[0] == ' ':
		return code, true
	default:
		lines := strings.Split(strings.TrimRight(code, "\n"), "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = "    " + l
			}
		}
		return strings.Join(lines, "\n") + "\n", true
	}
}

func definesAtMargin(code, entryPoint string) bool {
	for _, l := range strings.Split(code, "\n") {
		if strings.HasPrefix(l, "def "+entryPoint+"(") || strings.HasPrefix(l, "async def "+entryPoint+"(") {
			return true
		}
	}
	return false
}
