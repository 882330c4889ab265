package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// retryAfterCap bounds how long a server's Retry-After is honoured when it
// exceeds BackoffMax.
const retryAfterCap = 60 * time.Second

// randInt64N is the jitter source. Jitter only spreads retries in time; it
// never affects results, so it uses the runtime-seeded generator.
func randInt64N(n int64) int64 { return rand.Int64N(n) }

// backoffDelay returns the wait before retry attempt+1: the server's
// Retry-After when given (capped at max(backoffMax, 60s)), else a uniform
// random time in [d/2, d] with d = min(base·2^attempt, backoffMax).
func backoffDelay(base, backoffMax time.Duration, attempt int, retryAfter time.Duration, randN func(int64) int64) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, max(backoffMax, retryAfterCap))
	}
	if base <= 0 {
		return 0
	}
	d := backoffMax
	if attempt < 62 && base <= backoffMax>>attempt {
		d = base << attempt
	}
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + time.Duration(randN(int64(d-half)+1))
}

// parseRetryAfter reads the retry-after-ms header (OpenAI's, milliseconds)
// or Retry-After (seconds or an HTTP date, RFC 9110 §10.2.3). It returns 0
// when neither is present or valid.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// retryableStatus reports the statuses worth retrying: 408 Request
// Timeout, 409 Conflict, 429 Too Many Requests and every 5xx (the set the
// official OpenAI clients retry).
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// classify turns a go-openai error of one attempt into an attemptError.
func classify(err error, h http.Header, now time.Time) *attemptError {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
		return statusError(apiErr.HTTPStatusCode, apiErr.Message, h, now)
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0:
		body := string(reqErr.Body)
		if len(body) > 200 {
			body = body[:200] + "…"
		}
		return statusError(reqErr.HTTPStatusCode, strings.TrimSpace(body), h, now)
	case errors.Is(err, errNoChoices):
		return &attemptError{msg: "malformed response: no choices"}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return &attemptError{msg: "malformed JSON in response: " + err.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return &attemptError{retryable: true, msg: "connection dropped: " + err.Error()}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &attemptError{retryable: true, timeout: true, msg: "network timeout: " + err.Error()}
	}
	return &attemptError{msg: err.Error()}
}

func statusError(code int, message string, h http.Header, now time.Time) *attemptError {
	e := &attemptError{status: code, retryable: retryableStatus(code)}
	e.msg = fmt.Sprintf("status %d %s", code, http.StatusText(code))
	if message != "" {
		e.msg += ": " + message
	}
	if e.retryable {
		e.retryAfter = parseRetryAfter(h, now)
	} else {
		e.msg += " (not retried)"
	}
	return e
}
