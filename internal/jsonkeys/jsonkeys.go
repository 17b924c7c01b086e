package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxDepth bounds how deeply Check descends into a document. Step requests
// nest four levels at most (request, config, links, link).
const maxDepth = 32

// errTooDeep is returned for a document nested deeper than maxDepth.
var errTooDeep = fmt.Errorf("JSON is nested deeper than %d levels", maxDepth)

// Check refuses a JSON document in which one object holds two keys
// that are equal when case is ignored ({"freight":"a","Freight":"b"}, or the
// same key twice), and, when known is given, a top-level key that differs
// from one of the known names only in case ({"Project": ...}).
//
// Go's encoding/json keeps the last of duplicate keys and matches struct
// fields case-insensitively, while other readers of the same bytes (a proxy,
// an audit log, a person) may keep the first or match exactly: one request
// would then mean two different things. raw must be valid JSON.
func Check(raw []byte, known ...string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return walkJSON(dec, "", 0, known)
}

// walkJSON checks the next JSON value of dec; known applies to an object at
// depth 0 only.
func walkJSON(dec *json.Decoder, path string, depth int, known []string) error {
	if depth > maxDepth {
		return errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		seen := map[string]string{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("invalid JSON: %w", err)
			}
			key, _ := kt.(string)
			folded := foldKey(key)
			if prev, dup := seen[folded]; dup {
				if prev == key {
					return fmt.Errorf("%skey %q appears twice", pathPrefix(path), key)
				}
				return fmt.Errorf("%skeys %q and %q differ only in case", pathPrefix(path), prev, key)
			}
			seen[folded] = key
			if depth == 0 {
				if err := checkKnownKey(key, known); err != nil {
					return err
				}
			}
			if err := walkJSON(dec, joinPath(path, key), depth+1, nil); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, fmt.Sprintf("%s[%d]", path, i), depth+1, nil); err != nil {
				return err
			}
		}
	}
	// The closing delimiter.
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}

// checkKnownKey refuses a key that matches a known name only when case is
// ignored.
func checkKnownKey(key string, known []string) error {
	for _, k := range known {
		if key != k && strings.EqualFold(key, k) {
			return fmt.Errorf("key %q must be spelled %q: keys are case-sensitive", key, k)
		}
	}
	return nil
}

// foldKey maps keys that Go's JSON decoder treats as the same field to one
// value.
func foldKey(k string) string { return strings.ToLower(strings.ToUpper(k)) }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pathPrefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}
