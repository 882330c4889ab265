package grpcplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Logging: go-plugin logs through hclog; troupe logs through log/slog. Three
// streams reach the host's slog logger, every message prefixed with the
// plugin's name ("lbf-plugin: ..."):
//
//   - go-plugin's own messages (the hclogAdapter), routine ones demoted to
//     Debug so that starting and stopping a process per env instance stays
//     quiet (failures reach the caller as errors);
//   - the plugin process's stderr (the stderrSink): hclog-JSON lines (what the
//     serve kit's slog handler writes) keep their level and attributes, panics
//     are errors, other lines are Info; the last lines are kept for errors;
//   - what the plugin writes to os.Stdout/os.Stderr after serving started
//     (go-plugin forwards them over gRPC): Info lines with a "stream" attribute.

// hclogAdapter implements hclog.Logger on top of a *slog.Logger.
type hclogAdapter struct {
	slog   *slog.Logger
	prefix string // the plugin's display name
	name   string // hclog's dotted name
	args   []any  // implied args (With)
	// disabledName names the sub-logger go-plugin uses for the plugin's raw
	// stderr; it is disabled here because the stderrSink handles those lines.
	disabledName string
	off          bool
	// onExit receives go-plugin's report that the process exited.
	onExit func(reason string)
}

func (h *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if h.off || level == hclog.Off {
		return
	}
	if msg == "plugin process exited" && h.onExit != nil {
		reason := "exit status 0"
		for i := 0; i+1 < len(args); i += 2 {
			if k, _ := args[i].(string); k == "error" {
				reason = fmt.Sprint(args[i+1])
			}
		}
		h.onExit(reason)
	}
	// go-plugin's own messages: troupe reports failures in the errors it
	// returns, so routine ones (a process started, stopped, or killed after
	// a failure) are debug messages.
	sl := slogLevel(level)
	if sl == slog.LevelInfo || msg == "plugin process exited" || msg == "plugin failed to exit gracefully" {
		sl = min(sl, slog.LevelDebug)
	}
	ctx := context.Background()
	if !h.slog.Enabled(ctx, sl) {
		return
	}
	all := append(append([]any{}, h.args...), args...)
	h.slog.Log(ctx, sl, h.prefix+": "+msg, all...)
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hclogAdapter) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogAdapter) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogAdapter) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogAdapter) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogAdapter) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogAdapter) enabled(l hclog.Level) bool {
	return !h.off && h.slog.Enabled(context.Background(), slogLevel(l))
}

func (h *hclogAdapter) IsTrace() bool        { return h.enabled(hclog.Trace) }
func (h *hclogAdapter) IsDebug() bool        { return h.enabled(hclog.Debug) }
func (h *hclogAdapter) IsInfo() bool         { return h.enabled(hclog.Info) }
func (h *hclogAdapter) IsWarn() bool         { return h.enabled(hclog.Warn) }
func (h *hclogAdapter) IsError() bool        { return h.enabled(hclog.Error) }
func (h *hclogAdapter) ImpliedArgs() []any   { return h.args }
func (h *hclogAdapter) Name() string         { return h.name }
func (h *hclogAdapter) SetLevel(hclog.Level) {}

// GetLevel reports Off for the disabled stderr sub-logger (go-plugin then
// skips parsing those lines) and Trace otherwise (slog does the filtering).
func (h *hclogAdapter) GetLevel() hclog.Level {
	if h.off {
		return hclog.Off
	}
	return hclog.Trace
}

func (h *hclogAdapter) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any{}, h.args...), args...)
	return &c
}

func (h *hclogAdapter) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	c.off = h.off || (h.disabledName != "" && name == h.disabledName)
	return &c
}

func (h *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	c.off = h.disabledName != "" && name == h.disabledName
	return &c
}

func (h *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{emit: func(line string) { h.Info(line) }}
}

// lineWriter calls emit for every complete line written to it; Flush emits
// a trailing partial line.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.buf[:i]), "\r")
		w.buf = w.buf[i+1:]
		w.emit(line)
	}
	return len(p), nil
}

// stderrSink receives the plugin process's raw stderr: it logs every line
// and keeps the last few for error messages.
type stderrSink struct {
	lineWriter
	slog    *slog.Logger
	prefix  string
	inPanic bool

	tailMu sync.Mutex
	tail   []string
}

const stderrTailLines = 8

func newStderrSink(l *slog.Logger, prefix string) *stderrSink {
	s := &stderrSink{slog: l, prefix: prefix}
	s.emit = s.line
	return s
}

func (s *stderrSink) line(line string) {
	if line == "" {
		return
	}
	level, msg, attrs := parseLogLine(line)
	if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
		s.inPanic = true
	}
	if s.inPanic {
		level = slog.LevelError
	}
	if level >= slog.LevelInfo {
		s.remember(msg)
	}
	s.slog.Log(context.Background(), level, s.prefix+": "+msg, attrs...)
}

// remember keeps line among the last few for error messages.
func (s *stderrSink) remember(line string) {
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	if len(s.tail) == stderrTailLines {
		s.tail = s.tail[1:]
	}
	s.tail = append(s.tail, line)
}

// Tail returns the last lines the plugin wrote to stderr (Info and above),
// joined with " | ", or "" if there were none.
func (s *stderrSink) Tail() string {
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	t := strings.Join(s.tail, " | ")
	if len(t) > 1000 {
		t = "…" + t[len(t)-1000:]
	}
	return t
}

// parseLogLine reads one stderr line: an hclog-JSON object keeps its level,
// message and attributes; "[WARN] ..."-style prefixes set the level; any
// other line is Info.
func parseLogLine(line string) (slog.Level, string, []any) {
	if strings.HasPrefix(line, "{") {
		var obj map[string]any
		if json.Unmarshal([]byte(line), &obj) == nil {
			if msg, ok := obj["@message"].(string); ok {
				lvl, _ := obj["@level"].(string)
				keys := make([]string, 0, len(obj))
				for k := range obj {
					if !strings.HasPrefix(k, "@") {
						keys = append(keys, k)
					}
				}
				sort.Strings(keys)
				attrs := make([]any, 0, 2*len(keys))
				for _, k := range keys {
					attrs = append(attrs, k, obj[k])
				}
				return slogLevel(hclog.LevelFromString(lvl)), msg, attrs
			}
		}
	}
	for _, p := range []struct {
		prefix string
		level  slog.Level
	}{{"[TRACE]", slog.LevelDebug - 4}, {"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERROR]", slog.LevelError}} {
		if rest, ok := strings.CutPrefix(line, p.prefix); ok {
			return p.level, strings.TrimSpace(rest), nil
		}
	}
	return slog.LevelInfo, line, nil
}
