package agentfile

import (
	"reflect"
	"strings"
	"testing"
)

// An array of tables inside env.params (free-form, read by the env) is
// passed on as it is, in the file and through --set, while a misspelt key
// outside free-form tables is still an unknown key.
func TestArrayOfTablesInParams(t *testing.T) {
	text := strings.Replace(good, "size = 8", "size = 8\nlimits = [{ rpm = 5, tpm = 30 }, { rpm = 1, tpm = 2 }]", 1)
	cfg, err := Load(write(t, text), "env.params.writers=3")
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"rpm": int64(5), "tpm": int64(30)}, {"rpm": int64(1), "tpm": int64(2)}}
	if got := cfg.Env.Params["limits"]; !reflect.DeepEqual(got, want) {
		t.Errorf("env.params.limits = %#v, want %#v", got, want)
	}
	_, err = Load(write(t, strings.Replace(text, "group_size = 4", "group_size = 4\ngroup_sise = 5", 1)))
	if err == nil || !strings.Contains(err.Error(), "group_sise") {
		t.Errorf("misspelt key next to params tables: %v", err)
	}
}
