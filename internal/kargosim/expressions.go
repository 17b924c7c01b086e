package kargosim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"sigs.k8s.io/yaml"
)

// Expression delimiters Kargo recognises in templates.
var delimiters = [][2]string{{"${{", "}}"}, {"${%", "%}"}}

// templateFuncs are the functions every template may call, whatever its
// environment: quote, unsafeQuote, asJSON and asYAML.
func templateFuncs() []expr.Option {
	return []expr.Option{
		expr.Function("quote", quote, new(func(any) string)),
		expr.Function("unsafeQuote", unsafeQuote, new(func(any) string)),
		expr.Function("asJSON", asJSON, new(func(any) string)),
		expr.Function("asYAML", asYAML, new(func(any) string)),
	}
}

// quote makes a value come out of a template as a string: a string is
// wrapped in double quotes (which the template then strips), anything else
// is written as JSON first.
func quote(args ...any) (any, error) {
	if s, ok := args[0].(string); ok {
		return strconv.Quote(s), nil
	}
	return unsafeQuote(args...)
}

func unsafeQuote(args ...any) (any, error) {
	b, err := json.Marshal(args[0])
	if err != nil {
		return nil, fmt.Errorf("error applying quote(): %w", err)
	}
	return `"` + string(b) + `"`, nil
}

func asJSON(args ...any) (any, error) {
	b, err := json.MarshalIndent(args[0], "", "  ")
	if err != nil {
		return nil, fmt.Errorf("error applying asJSON(): %w", err)
	}
	return `"` + string(b) + "\n" + `"`, nil
}

func asYAML(args ...any) (any, error) {
	b, err := yaml.Marshal(args[0])
	if err != nil {
		return nil, fmt.Errorf("error applying asYAML(): %w", err)
	}
	return `"` + string(b) + `"`, nil
}

// evaluateTemplate evaluates every ${{ }} expression in the template and
// then types the result the way Kargo does: text in double quotes stays a
// string (quotes removed), else a number, a boolean or JSON if it parses as
// one, else the text itself. So "${{ vars.n }}" with n = "2" is the number 2,
// and a template that is one expression keeps its JSON type. A string with no
// expression is returned unchanged.
func evaluateTemplate(template string, env map[string]any, opts ...expr.Option) (any, error) {
	if !hasExpression(template) {
		return template, nil
	}
	opts = append(append([]expr.Option{}, opts...), templateFuncs()...)
	text, err := expandTemplate(template, env, opts)
	if err != nil {
		return nil, err
	}
	trimmedNewline := strings.HasSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\n")
	if len(text) > 1 && strings.HasPrefix(text, `"`) && strings.HasSuffix(text, `"`) {
		text = text[1 : len(text)-1]
		if trimmedNewline {
			text += "\n"
		}
		return text, nil
	}
	if n, err := strconv.ParseFloat(text, 64); err == nil {
		return n, nil
	}
	if b, err := strconv.ParseBool(text); err == nil {
		return b, nil
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err == nil {
		return v, nil
	}
	if trimmedNewline {
		text += "\n"
	}
	return text, nil
}

func hasExpression(s string) bool {
	for _, d := range delimiters {
		if strings.Contains(s, d[0]) {
			return true
		}
	}
	return false
}

// expandTemplate replaces each expression with its value as text (strings
// as they are, anything else as JSON).
func expandTemplate(template string, env map[string]any, opts []expr.Option) (string, error) {
	var out strings.Builder
	for {
		start, end := -1, ""
		for _, d := range delimiters {
			if i := strings.Index(template, d[0]); i >= 0 && (start < 0 || i < start) {
				start, end = i, d[1]
			}
		}
		if start < 0 {
			out.WriteString(template)
			return out.String(), nil
		}
		out.WriteString(template[:start])
		rest := template[start+3:]
		stop := strings.Index(rest, end)
		if stop < 0 {
			return "", fmt.Errorf("unclosed expression: expected %q but reached end of template", end)
		}
		val, err := runExpression(rest[:stop], env, opts)
		if err != nil {
			return "", err
		}
		out.WriteString(val)
		template = rest[stop+len(end):]
	}
}

func runExpression(code string, env map[string]any, opts []expr.Option) (string, error) {
	program, err := expr.Compile(code, opts...)
	if err != nil {
		return "", err
	}
	res, err := expr.Run(program, env)
	if err != nil {
		return "", err
	}
	if s, ok := res.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// evaluateJSONTemplate evaluates every string in a JSON object as a template
// and returns the object with the evaluated values.
func evaluateJSONTemplate(raw []byte, env map[string]any, opts ...expr.Option) (map[string]any, error) {
	var parsed map[string]any
	if err := json.Unmarshal(raw, &parsed); err != nil {
		return nil, fmt.Errorf("input is not valid JSON; are all expressions enclosed in quotes? %w", err)
	}
	if err := evaluateIn(parsed, env, opts); err != nil {
		return nil, err
	}
	return parsed, nil
}

func evaluateIn(v any, env map[string]any, opts []expr.Option) error {
	eval := func(val any, set func(any)) error {
		switch x := val.(type) {
		case map[string]any, []any:
			return evaluateIn(x, env, opts)
		case string:
			res, err := evaluateTemplate(x, env, opts...)
			if err != nil {
				return err
			}
			set(res)
		}
		return nil
	}
	switch c := v.(type) {
	case map[string]any:
		for k, val := range c {
			if err := eval(val, func(r any) { c[k] = r }); err != nil {
				return err
			}
		}
	case []any:
		for i, val := range c {
			if err := eval(val, func(r any) { c[i] = r }); err != nil {
				return err
			}
		}
	}
	return nil
}
