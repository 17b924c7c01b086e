package steps

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/kargo-fleet/kargo-fleet/internal/jsonkeys"
)

// schemaFS holds the step config schemas: the contract of each step's config.
//
//go:embed schemas/*.json
var schemaFS embed.FS

// configSchema is one compiled step config schema.
type configSchema struct {
	schema *jsonschema.Schema
	// types maps each top-level property to its JSON type, for normalize.
	types map[string]string
}

// loadSchemas compiles every embedded schema once; the result never changes.
var loadSchemas = sync.OnceValues(func() (map[string]*configSchema, error) {
	entries, err := fs.ReadDir(schemaFS, "schemas")
	if err != nil {
		return nil, fmt.Errorf("error reading step schemas: %w", err)
	}
	out := make(map[string]*configSchema, len(entries))
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		raw, err := schemaFS.ReadFile(path.Join("schemas", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("error reading schema %q: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("error parsing schema %q: %w", name, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		url := "mem://steps/" + e.Name()
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("error adding schema %q: %w", name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("error compiling schema %q: %w", name, err)
		}
		out[name] = &configSchema{schema: sch, types: propertyTypes(doc)}
	}
	return out, nil
})

// Schema returns the JSON schema of a step's config.
func Schema(step string) ([]byte, error) {
	raw, err := schemaFS.ReadFile(path.Join("schemas", step+".json"))
	if err != nil {
		return nil, fmt.Errorf("error reading schema of step %q: %w", step, err)
	}
	return raw, nil
}

// ValidateConfig checks a config of the named fleet step as the step checks
// it before it runs: normalised, validated against the step's schema,
// decoded strictly and held to the step's own rules (a gate waits for
// something, a condition compiles). A bad config, or an unknown step, is a
// TerminalError.
func ValidateConfig(step string, raw json.RawMessage) error {
	var err error
	switch step {
	case WaveStepName:
		_, err = (&waveStep{}).convert(raw)
	case RollbackStepName:
		_, err = (&rollbackStep{}).convert(raw)
	case GateStepName:
		_, err = (&gateStep{programs: newProgramCache()}).convert(raw)
	case StatusStepName:
		_, err = (&statusStep{programs: newProgramCache()}).convert(raw)
	default:
		err = &TerminalError{Err: fmt.Errorf("no fleet step %q", step)}
	}
	return err
}

// TargetFields returns the config fields of a step that choose what
// Freight, or which rollout, the step acts on (for fleet-rollback: freight,
// rollbackOf and anyFreight). The step server accepts them only as the
// calling Promotion's own step states them. Other steps act only on the
// calling Promotion's Stage and Freight, and have none.
func TargetFields(step string) []string {
	if step == RollbackStepName {
		return slices.Clone(rollbackTargetFields)
	}
	return nil
}

// NormalizeConfig applies, in place, the rules decodeConfig applies to a
// step's config before validating it: null and "" are unset (removed), and
// a string given for a boolean, number, list or object property is parsed.
// It lets a caller compare two configs as the step reads them.
func NormalizeConfig(step string, obj map[string]any) error {
	schemas, err := loadSchemas()
	if err != nil {
		return err
	}
	cs, ok := schemas[step]
	if !ok {
		return &TerminalError{Err: fmt.Errorf("no schema for step %q", step)}
	}
	if err := normalize(obj, cs.types); err != nil {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: %w", step, err)}
	}
	return nil
}

// propertyTypes returns the declared type of each top-level property.
func propertyTypes(doc any) map[string]string {
	types := map[string]string{}
	root, _ := doc.(map[string]any)
	props, _ := root["properties"].(map[string]any)
	defs, _ := root["$defs"].(map[string]any)
	for name, p := range props {
		pm, _ := p.(map[string]any)
		if ref, ok := pm["$ref"].(string); ok {
			pm, _ = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		if t, ok := pm["type"].(string); ok {
			types[name] = t
		}
	}
	return types
}

// decodeConfig validates a step's raw config against the step's schema and
// decodes it strictly into out. Every error is a TerminalError.
//
// Before validation the config is normalised, because Kargo task variables
// are strings: a property that is null or "" counts as unset, and a string
// given for a boolean, number, list or object property is parsed ("true",
// "5", `[{"url": ...}]`).
//
// precheck, when given, sees the normalised config before the schema does, so
// that a step can explain a rule the schema's own message would obscure.
func decodeConfig(step string, raw json.RawMessage, out any, precheck ...func(map[string]any) error) error {
	schemas, err := loadSchemas()
	if err != nil {
		return err
	}
	cs, ok := schemas[step]
	if !ok {
		return &TerminalError{Err: fmt.Errorf("no schema for step %q", step)}
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = []byte("{}")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: not JSON: %w", step, err)}
	}
	if err := jsonkeys.Check(raw); err != nil {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: %w", step, err)}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: must be a JSON object", step)}
	}
	if err := normalize(obj, cs.types); err != nil {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: %w", step, err)}
	}
	for _, check := range precheck {
		if err := check(obj); err != nil {
			return &TerminalError{Err: fmt.Errorf("invalid %s config: %w", step, err)}
		}
	}
	if err := cs.schema.Validate(obj); err != nil {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: %s", step, describeValidation(err))}
	}
	norm, err := json.Marshal(obj)
	if err != nil {
		return &TerminalError{Err: fmt.Errorf("error encoding %s config: %w", step, err)}
	}
	dec := json.NewDecoder(bytes.NewReader(norm))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return &TerminalError{Err: fmt.Errorf("invalid %s config: %w", step, err)}
	}
	return nil
}

// normalize applies the string-to-type rules of decodeConfig in place.
func normalize(obj map[string]any, types map[string]string) error {
	for k, v := range obj {
		if v == nil || v == "" {
			delete(obj, k)
			continue
		}
		s, isString := v.(string)
		if !isString {
			continue
		}
		switch types[k] {
		case "boolean":
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("%s: %q is not a boolean", k, s)
			}
			obj[k] = b
		case "integer", "number":
			n := json.Number(strings.TrimSpace(s))
			if _, err := n.Float64(); err != nil {
				return fmt.Errorf("%s: %q is not a number", k, s)
			}
			obj[k] = n
		case "array", "object":
			parsed, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
			if err != nil {
				return fmt.Errorf("%s: the string is not JSON: %w", k, err)
			}
			obj[k] = parsed
		}
	}
	return nil
}

// englishPrinter formats schema violations.
var englishPrinter = message.NewPrinter(language.English)

// describeValidation turns a schema error into one line naming each
// offending field, e.g. "mode: value must be one of 'start', 'wait'".
func describeValidation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := strings.Join(e.InstanceLocation, ".")
			if loc == "" {
				loc = "config"
			}
			msgs = append(msgs, loc+": "+e.ErrorKind.LocalizedString(englishPrinter))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(msgs)
	return strings.Join(slices.Compact(msgs), "; ")
}
