package bus

import (
	"encoding/json"
	"fmt"
)

// Entries encodes the model as table entries, one per key. The model's map
// keys are already table keys (Key(KindServer, host), …).
func (m Model) Entries() (map[string][]byte, error) {
	entries := make(map[string][]byte, len(m.Servers)+len(m.Backends)+len(m.Certificates)+len(m.Ingresses))
	if err := encodeInto(entries, m.Servers); err != nil {
		return nil, err
	}
	if err := encodeInto(entries, m.Backends); err != nil {
		return nil, err
	}
	if err := encodeInto(entries, m.Certificates); err != nil {
		return nil, err
	}
	if err := encodeInto(entries, m.Ingresses); err != nil {
		return nil, err
	}
	if err := encodeInto(entries, m.Secrets); err != nil {
		return nil, err
	}
	if m.Settings != nil {
		if err := encodeInto(entries, map[string]*Settings{SettingsKey: m.Settings}); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

func encodeInto[V any](entries map[string][]byte, values map[string]V) error {
	for key, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		entries[key] = data
	}
	return nil
}

// ModelFromEntries decodes a model table. Unknown kinds are an error: they
// mean a producer speaks a schema this consumer does not.
func ModelFromEntries(entries map[string][]byte) (Model, error) {
	m := NewModel()
	for key, data := range entries {
		kind, _, err := SplitKey(key)
		if err != nil {
			return m, err
		}
		switch kind {
		case KindServer:
			err = decodeInto(m.Servers, key, data)
		case KindBackend:
			err = decodeInto(m.Backends, key, data)
		case KindCertificate:
			err = decodeInto(m.Certificates, key, data)
		case KindIngress:
			err = decodeInto(m.Ingresses, key, data)
		case KindSecret:
			err = decodeInto(m.Secrets, key, data)
		case KindConfig:
			settings := map[string]*Settings{}
			err = decodeInto(settings, key, data)
			m.Settings = settings[SettingsKey]
		default:
			err = fmt.Errorf("model key %q: unknown kind %q", key, kind)
		}
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

func decodeInto[V any](values map[string]*V, key string, data []byte) error {
	v := new(V)
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	values[key] = v
	return nil
}
