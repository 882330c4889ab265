package core

import "fmt"

// A SettingError is a setting whose value cannot work. Each component
// declares its own settings (their TOML names, defaults and rules) and its
// Validate method returns a *SettingError whose Key is the setting's name
// within the component's table, such as "group_size". Whoever nests the
// table adds the table's name with [SettingError.In]; the agentfile then
// adds the file and line.
type SettingError struct {
	// Key is the setting's dotted name, e.g. "group_size" or
	// "train.group_size" once nested.
	Key string
	// Msg says what is wrong, e.g. "must be at least 1, got -3".
	Msg string
}

// NewSettingError returns a *SettingError about key whose Msg is
// formatted as by [fmt.Sprintf]. It is how every component's Validate
// makes its errors.
func NewSettingError(key, format string, args ...any) *SettingError {
	return &SettingError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Error returns "KEY: MSG".
func (e *SettingError) Error() string { return e.Key + ": " + e.Msg }

// In returns a copy of e whose Key is prefixed with table and a dot.
func (e *SettingError) In(table string) *SettingError {
	return &SettingError{Key: table + "." + e.Key, Msg: e.Msg}
}
