package bus

import (
	"encoding/json"
	"fmt"

	"switchyard.dev/switchyard/internal/parallel"
)

// Values lists the model as table values by key, not yet encoded. The
// model's map keys are already table keys (Key(KindServer, host), …).
func (m Model) Values() map[string]any {
	values := make(map[string]any, len(m.Servers)+len(m.Backends)+len(m.Certificates)+len(m.Ingresses)+1)
	addValues(values, m.Servers)
	addValues(values, m.Backends)
	addValues(values, m.Certificates)
	addValues(values, m.Ingresses)
	addValues(values, m.Secrets)
	if m.Settings != nil {
		values[SettingsKey] = m.Settings
	}
	if m.Streams != nil {
		values[StreamServicesKey] = m.Streams
	}
	return values
}

func addValues[V any](values map[string]any, from map[string]V) {
	for key, v := range from {
		values[key] = v
	}
}

// Entries encodes the model as table entries, one per key.
func (m Model) Entries() (map[string][]byte, error) {
	values := m.Values()
	entries := make(map[string][]byte, len(values))
	for key, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", key, err)
		}
		entries[key] = data
	}
	return entries, nil
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
		case KindStream:
			streams := map[string]*StreamServices{}
			err = decodeInto(streams, key, data)
			m.Streams = streams[StreamServicesKey]
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

// minEncodeEach is the fewest values worth a goroutine of EncodeValues.
const minEncodeEach = 128

// EncodeValues encodes values[key] for each of keys, as JSON, on every
// CPU when there are hundreds (a start's whole table is tens of
// thousands), and returns the encodings in the order of keys. A value
// that does not encode has a nil encoding and its error, naming the key,
// in errs at the same index; errs is nil when every value encoded.
func EncodeValues(values map[string]any, keys []string) (encoded [][]byte, errs []error) {
	encoded, all := make([][]byte, len(keys)), make([]error, len(keys))
	parallel.For(len(keys), minEncodeEach, func(i int) {
		data, err := json.Marshal(values[keys[i]])
		if err != nil {
			all[i] = fmt.Errorf("encode %s: %w", keys[i], err)
			return
		}
		encoded[i] = data
	})
	for _, err := range all {
		if err != nil {
			return encoded, all
		}
	}
	return encoded, nil
}
