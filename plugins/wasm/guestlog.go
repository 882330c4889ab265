package wasm

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// maxLineLen bounds one logged line of guest output; longer lines are cut.
const maxLineLen = 4096

// tailLines is how many lines of a guest's stderr a failure report quotes.
const tailLines = 4

// guestLog sends one module's stdout and stderr lines to a slog.Logger,
// prefixed with the module name and rate-limited by a token bucket shared
// by all the module's instances. Suppressed lines are counted and reported
// in one "suppressed N lines" record when output is allowed again or the
// module closes.
type guestLog struct {
	logger *slog.Logger
	module string
	rate   float64 // lines per second
	burst  float64

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
	now        func() time.Time
}

func newGuestLog(logger *slog.Logger, module string, perSecond int) *guestLog {
	if logger == nil {
		logger = slog.Default()
	}
	if perSecond <= 0 {
		perSecond = defaultLogLinesPerSecond
	}
	g := &guestLog{logger: logger, module: module, rate: float64(perSecond), burst: 2 * float64(perSecond), now: time.Now}
	g.tokens = g.burst
	return g
}

func (g *guestLog) line(stream, text string) {
	g.mu.Lock()
	now := g.now()
	if !g.last.IsZero() {
		g.tokens = min(g.burst, g.tokens+now.Sub(g.last).Seconds()*g.rate)
	}
	g.last = now
	if g.tokens < 1 {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	g.tokens--
	sup := g.suppressed
	g.suppressed = 0
	g.mu.Unlock()
	if sup > 0 {
		g.logger.Warn("wasm "+g.module+": suppressed "+itoa(sup)+" lines of guest output", "module", g.module, "suppressed", sup)
	}
	g.logger.Info("wasm "+g.module+": "+text, "module", g.module, "stream", stream)
}

// flush reports lines still counted as suppressed.
func (g *guestLog) flush() {
	g.mu.Lock()
	sup := g.suppressed
	g.suppressed = 0
	g.mu.Unlock()
	if sup > 0 {
		g.logger.Warn("wasm "+g.module+": suppressed "+itoa(sup)+" lines of guest output", "module", g.module, "suppressed", sup)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// streamWriter splits one instance's output stream into lines for the
// module's guestLog, and keeps the last few lines for failure reports.
type streamWriter struct {
	g       *guestLog
	stream  string
	partial []byte

	mu   sync.Mutex
	tail []string
	// headline is the first line that looks like a fatal report ("panic:",
	// "fatal error:", "runtime:"), which beats the tail of a stack trace.
	headline string
}

var headlinePrefixes = []string{"panic: ", "fatal error: ", "runtime: "}

func (w *streamWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLineLen - len(w.partial)
			if len(p) > room {
				w.partial = append(w.partial, p[:room]...)
				w.emit()
				p = p[room:]
				continue
			}
			w.partial = append(w.partial, p...)
			break
		}
		w.partial = append(w.partial, p[:min(i, max(0, maxLineLen-len(w.partial)))]...)
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *streamWriter) emit() {
	s := strings.TrimRight(string(w.partial), "\r")
	w.partial = w.partial[:0]
	w.mu.Lock()
	if len(w.tail) == tailLines {
		copy(w.tail, w.tail[1:])
		w.tail = w.tail[:tailLines-1]
	}
	w.tail = append(w.tail, s)
	if w.headline == "" {
		for _, p := range headlinePrefixes {
			if strings.HasPrefix(s, p) {
				w.headline = s
				break
			}
		}
	}
	w.mu.Unlock()
	w.g.line(w.stream, s)
}

// close emits a partial last line.
func (w *streamWriter) close() {
	if len(w.partial) > 0 {
		w.emit()
	}
}

// lastLines returns the last lines written, joined by " | ".
func (w *streamWriter) lastLines() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.headline != "" {
		return w.headline
	}
	var parts []string
	for _, l := range w.tail {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " | ")
}
