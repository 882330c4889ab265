package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/agentfile"
)

// Quiet periods of the waiting status: a new status is printed at most
// once per statusQuiet (statusQuietTTY on a terminal, where it replaces
// the live line), except that a wait of at least longWait that ends
// longWait after every wait announced so far is always announced, so a
// long Retry-After never leaves the terminal silent.
const (
	statusQuiet    = 10 * time.Second
	statusQuietTTY = time.Second
	longWait       = 10 * time.Second
)

// watchRetries makes every LLM backend of cfg report its retries to p (as
// the Logger of its [llm.NAME] settings, which the openai backend sends
// one Warn record per retry, before its wait).
func watchRetries(cfg *agentfile.Config, p *progress) {
	l := slog.New(retryHandler{p})
	for name, c := range cfg.LLM {
		c.Logger = l
		cfg.LLM[name] = c
	}
}

// retryEvent is one retry of an LLM call, read from its log record.
type retryEvent struct {
	delay      time.Duration
	status     int
	retryAfter bool
	err        string
}

// retryHandler is the slog.Handler behind watchRetries: it passes each
// retry record to the progress line instead of printing it.
type retryHandler struct{ p *progress }

func (h retryHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h retryHandler) Handle(_ context.Context, r slog.Record) error {
	var ev retryEvent
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch {
		case a.Key == "delay" && v.Kind() == slog.KindDuration:
			ev.delay = v.Duration()
		case a.Key == "status" && v.Kind() == slog.KindInt64:
			ev.status = int(v.Int64())
		case a.Key == "retry_after" && v.Kind() == slog.KindBool:
			ev.retryAfter = v.Bool()
		case a.Key == "error":
			ev.err = v.String()
		}
		return true
	})
	h.p.retrying(ev, time.Now())
	return nil
}

func (h retryHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h retryHandler) WithGroup(string) slog.Handler      { return h }

// retrying counts a retry and, unless a status was printed a moment ago,
// says on the progress line what the run is waiting for.
func (p *progress) retrying(ev retryEvent, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retries++
	switch {
	case ev.status == http.StatusTooManyRequests:
		p.rateLimited++
	case ev.status >= 500:
		p.serverErrors++
	}
	end := now.Add(ev.delay)
	long := ev.delay >= longWait && end.After(p.announcedUntil.Add(longWait))
	if now.Before(p.quietUntil) && !long {
		return
	}
	quiet := statusQuiet
	if p.tty {
		quiet = statusQuietTTY
	}
	p.quietUntil = now.Add(quiet)
	if end.After(p.announcedUntil) {
		p.announcedUntil = end
	}
	msg := fmt.Sprintf("waiting %s for the LLM endpoint (%s), %d retries so far (%d× 429, %d× 5xx)",
		waitText(ev.delay), retryCause(ev), p.retries, p.rateLimited, p.serverErrors)
	p.printed = true
	if p.tty {
		if p.line != "" {
			msg = p.line + "  | " + msg
		}
		fmt.Fprintf(p.w, "\r\033[K%s", msg)
		return
	}
	fmt.Fprintf(p.w, "troupe: %s\n", msg)
}

// waitText formats a wait: whole seconds, tenths below 10 s, whole
// milliseconds below 1 s.
func waitText(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// retryCause says why a call is retried: its status (with Retry-After
// when the server set the delay), else its error, shortened.
func retryCause(ev retryEvent) string {
	if ev.status != 0 {
		s := fmt.Sprint(ev.status)
		if ev.retryAfter {
			s += ", Retry-After"
		}
		return s
	}
	if r := []rune(ev.err); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return ev.err
}

// trafficText summarises an iteration's LLM traffic for the progress
// line; "" when it sent no request (the simulated LLM).
func trafficText(t core.Traffic) string {
	if t.Requests == 0 {
		return ""
	}
	return fmt.Sprintf("  llm %d req %d retries (%d× 429, %d× 5xx, %d timeouts) %s waiting",
		t.Requests, t.Retries, t.RateLimited, t.ServerErrors, t.Timeouts, waitText(time.Duration(t.WaitSeconds*float64(time.Second))))
}
