package testenv

import (
	"errors"
	"testing"
)

func TestNeed(t *testing.T) {
	t.Setenv(RequireEnv, "")
	skipped := t.Run("missing", func(t *testing.T) { Need(t, errors.New("no tool")); t.Fatal("not skipped") })
	if !skipped {
		t.Fatal("a missing tool failed the test without " + RequireEnv)
	}
	t.Run("present", func(t *testing.T) { Need(t, nil) })
}
