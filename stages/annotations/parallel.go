package annotations

import (
	"encoding/json"
	"fmt"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/parallel"
)

// JSON on every CPU: at a start the stage decodes and encodes tens of
// thousands of values (10,000 Ingresses: a server and an info each, in
// and out), its largest cost; each value is independent of the others.

// minParallel is the fewest values worth a goroutine: an edited Ingress
// is a handful, decoded in turn.
const minParallel = 256

// predecode decodes the changed servers and Ingress infos, the values set
// would decode one by one, into their typed values by key.
func predecode(changed map[string][]byte) (map[string]any, error) {
	var keys []string
	for key, data := range changed {
		if data != nil && (kindOf(key) == bus.KindServer || kindOf(key) == bus.KindIngress) {
			keys = append(keys, key)
		}
	}
	values, errs := make([]any, len(keys)), make([]error, len(keys))
	parallel.For(len(keys), minParallel, func(i int) {
		var v any = new(bus.Server)
		if kindOf(keys[i]) == bus.KindIngress {
			v = new(bus.IngressInfo)
		}
		if err := json.Unmarshal(changed[keys[i]], v); err != nil {
			errs[i] = fmt.Errorf("decode %s: %w", keys[i], err)
		}
		values[i] = v
	})
	decoded := make(map[string]any, len(keys))
	for i, key := range keys {
		if errs[i] != nil {
			return nil, errs[i]
		}
		decoded[key] = values[i]
	}
	return decoded, nil
}

// kindOf is a table key's kind, its first token (bus.SplitKey's kind).
func kindOf(key string) string {
	kind, _, _ := strings.Cut(key, ".")
	return kind
}

// encodeAll encodes values[i] for every i, in parallel, and returns the
// encodings in the same order.
func encodeAll(keys []string, values []any) ([][]byte, error) {
	out, errs := make([][]byte, len(values)), make([]error, len(values))
	parallel.For(len(values), minParallel, func(i int) {
		out[i], errs[i] = json.Marshal(values[i])
		if errs[i] != nil {
			errs[i] = fmt.Errorf("encode %s: %w", keys[i], errs[i])
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
