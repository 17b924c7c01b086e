package stepserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// A step call is the caller's word; the calling Promotion's spec.steps are
// Kargo's: its webhook copies them from the Stage's promotion template, and
// only someone who may edit the Stage changes them. So the config fields
// that choose what Freight or rollout a step acts on (steps.TargetFields)
// are accepted only as the Promotion's own step of the call's alias states
// them. A holder of the Project's step token can then replay what a
// Promotion was always going to ask, and nothing else.
//
// The server reads the step without evaluating it. A field is stated when
// the step's config, or the body of the http step a fleet task expands to,
// gives it as a literal, as vars.<name> whose value is a literal (or
// `${{ "" }}`, the tasks' empty default), or as ctx.targetFreight.name (the
// Promotion's own Freight). Any other expression is a value the server
// cannot know: the call must then leave the field at its default.

// statedKind is what a Promotion's step says of one config field.
type statedKind int

const (
	// statedUnset: the step leaves the field at its default.
	statedUnset statedKind = iota
	// statedLiteral: the step gives the field a value the server can read.
	statedLiteral
	// statedExpression: the step computes the field when Kargo runs it.
	statedExpression
)

// statedField is what a Promotion's step says of one config field.
type statedField struct {
	kind statedKind
	// value is the literal, as the step reads it (after
	// steps.NormalizeConfig).
	value any
	// source is the expression, for messages.
	source string
}

// statedStep is the calling Promotion's own step of a call's alias.
type statedStep struct {
	// found is false when the Promotion has no step of that alias.
	found bool
	// calls is the fleet step the step calls, "" when it cannot be read.
	calls string
	// fields holds what the step says of each target field.
	fields map[string]statedField
}

// taskQuoteFuncs are the functions the shipped tasks (or a hand-written
// http step) wrap a JSON body in.
var taskQuoteFuncs = map[string]bool{"quote": true, "asJSON": true}

// readStatedStep reads, from the Promotion's spec.steps, the step aliased
// alias and what it says of each of the fields of the step it calls.
func readStatedStep(promo *kargo.Promotion, alias, step string, fields []string) (statedStep, error) {
	var ps *kargo.PromotionStep
	for i := range promo.Spec.Steps {
		if promo.Spec.Steps[i].As == alias {
			ps = &promo.Spec.Steps[i]
			break
		}
	}
	if ps == nil {
		return statedStep{}, nil
	}
	r := stepReader{promo: promo, step: ps}
	out := statedStep{found: true, fields: map[string]statedField{}}
	var config map[string]any
	if ps.Config != nil {
		_ = json.Unmarshal(ps.Config.Raw, &config)
	}
	var raw map[string]statedField
	switch ps.Uses {
	case "http":
		url, _ := config["url"].(string)
		out.calls = stepOfURL(url)
		body, _ := config["body"].(string)
		raw = r.bodyFields(body, fields)
	default:
		// A fleet step run as a step of its own (the Akuity Platform's
		// custom steps): the config is the step's config.
		out.calls = ps.Uses
		raw = r.configFields(config, fields)
	}
	if out.calls != step {
		return out, nil
	}
	literals := map[string]any{}
	for f, v := range raw {
		if v.kind == statedLiteral {
			literals[f] = v.value
		}
	}
	if err := steps.NormalizeConfig(step, literals); err != nil {
		return out, err
	}
	for _, f := range fields {
		v := raw[f]
		if v.kind == statedLiteral {
			v.value = literals[f]
			if isDefault(v.value) {
				v = statedField{}
			}
		}
		out.fields[f] = v
	}
	return out, nil
}

// stepOfURL returns the fleet step an http step's URL calls: the literal
// text after the last PathPrefix, or "" when there is none.
func stepOfURL(url string) string {
	i := strings.LastIndex(url, PathPrefix)
	if i < 0 {
		return ""
	}
	name, _, _ := strings.Cut(url[i+len(PathPrefix):], "?")
	if strings.Contains(name, "${{") {
		return ""
	}
	return name
}

// stepReader reads one step of a Promotion.
type stepReader struct {
	promo *kargo.Promotion
	step  *kargo.PromotionStep
}

// bodyFields reads the fields from the "config" object of an http step's
// JSON body: plain JSON, or one expression quoting a map literal.
func (r stepReader) bodyFields(body string, fields []string) map[string]statedField {
	inner, whole := wholeExpression(body)
	switch {
	case whole:
		node, err := parseExpression(inner)
		if err != nil {
			return allExpression(fields, body)
		}
		if call, ok := node.(*ast.CallNode); ok && len(call.Arguments) == 1 {
			if id, ok := call.Callee.(*ast.IdentifierNode); ok && taskQuoteFuncs[id.Value] {
				node = call.Arguments[0]
			}
		}
		m, ok := node.(*ast.MapNode)
		if !ok {
			return allExpression(fields, body)
		}
		cfg, found := pairOf(m, "config")
		if !found {
			return map[string]statedField{}
		}
		cm, ok := cfg.(*ast.MapNode)
		if !ok {
			return allExpression(fields, "config: "+cfg.String())
		}
		out := map[string]statedField{}
		for _, f := range fields {
			if v, found := pairOf(cm, f); found {
				out[f] = r.nodeValue(v, true)
			}
		}
		return out
	case strings.Contains(body, "${{"):
		return allExpression(fields, body)
	}
	var doc struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return allExpression(fields, body)
	}
	return r.configFields(doc.Config, fields)
}

// configFields reads the fields of a config object whose values are JSON
// values or strings holding expressions.
func (r stepReader) configFields(config map[string]any, fields []string) map[string]statedField {
	out := map[string]statedField{}
	for _, f := range fields {
		v, ok := config[f]
		if !ok {
			continue
		}
		out[f] = r.stringValue(v, true)
	}
	return out
}

// stringValue reads a JSON value that may be a string holding one
// expression. followVars lets the expression be vars.<name>, read once.
func (r stepReader) stringValue(v any, followVars bool) statedField {
	s, isString := v.(string)
	if !isString || !strings.Contains(s, "${{") {
		if v == nil {
			return statedField{}
		}
		return statedField{kind: statedLiteral, value: v}
	}
	inner, whole := wholeExpression(s)
	if !whole {
		return statedField{kind: statedExpression, source: s}
	}
	node, err := parseExpression(inner)
	if err != nil {
		return statedField{kind: statedExpression, source: s}
	}
	got := r.nodeValue(node, followVars)
	if got.kind == statedExpression {
		got.source = s
	}
	return got
}

// nodeValue reads an expression node: a literal, ctx.targetFreight.name, or
// (when followVars) vars.<name> with a value that reads as a literal.
func (r stepReader) nodeValue(node ast.Node, followVars bool) statedField {
	switch n := node.(type) {
	case *ast.NilNode:
		return statedField{}
	case *ast.StringNode:
		return statedField{kind: statedLiteral, value: n.Value}
	case *ast.BoolNode:
		return statedField{kind: statedLiteral, value: n.Value}
	case *ast.MemberNode:
		path := memberPath(n)
		switch {
		case path == "ctx.targetFreight.name":
			return statedField{kind: statedLiteral, value: r.promo.Spec.Freight}
		case followVars && strings.HasPrefix(path, "vars.") && strings.Count(path, ".") == 1:
			name := strings.TrimPrefix(path, "vars.")
			value, ok := r.variable(name)
			if !ok {
				return statedField{}
			}
			got := r.stringValue(value, false)
			if got.kind == statedExpression {
				got.source = fmt.Sprintf("%s = %q", path, value)
			}
			return got
		}
	}
	return statedField{kind: statedExpression, source: node.String()}
}

// variable returns the value Kargo gives vars.<name> in the step: the
// step's own vars (a task's inputs, expanded into each of its steps) win
// over the Promotion's, and a later definition over an earlier one.
func (r stepReader) variable(name string) (string, bool) {
	for _, vars := range [][]kargo.ExpressionVariable{r.step.Vars, r.promo.Spec.Vars} {
		for i := len(vars) - 1; i >= 0; i-- {
			if vars[i].Name == name {
				return vars[i].Value, true
			}
		}
	}
	return "", false
}

// memberPath returns a.b.c for a chain of property accesses on an
// identifier, or "" for anything else.
func memberPath(node ast.Node) string {
	switch n := node.(type) {
	case *ast.IdentifierNode:
		return n.Value
	case *ast.MemberNode:
		prop, ok := n.Property.(*ast.StringNode)
		if !ok || n.Method {
			return ""
		}
		base := memberPath(n.Node)
		if base == "" {
			return ""
		}
		return base + "." + prop.Value
	}
	return ""
}

// pairOf returns the value of a string key of a map literal.
func pairOf(m *ast.MapNode, key string) (ast.Node, bool) {
	for _, p := range m.Pairs {
		pair, ok := p.(*ast.PairNode)
		if !ok {
			continue
		}
		if k, ok := pair.Key.(*ast.StringNode); ok && k.Value == key {
			return pair.Value, true
		}
	}
	return nil, false
}

// wholeExpression returns the expression of a string that is exactly one
// ${{ ... }}.
func wholeExpression(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "${{") || !strings.HasSuffix(t, "}}") || strings.Count(t, "${{") != 1 {
		return "", false
	}
	return strings.TrimSpace(t[len("${{") : len(t)-len("}}")]), true
}

// parseExpression parses an expr-lang expression without evaluating it.
func parseExpression(src string) (ast.Node, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("error parsing expression: %w", err)
	}
	return tree.Node, nil
}

// allExpression says every field is computed by src.
func allExpression(fields []string, src string) map[string]statedField {
	out := make(map[string]statedField, len(fields))
	for _, f := range fields {
		out[f] = statedField{kind: statedExpression, source: src}
	}
	return out
}

// isDefault reports whether a normalized config value means "unset": the
// steps' target fields default to "" and false.
func isDefault(v any) bool {
	return v == nil || v == false || v == ""
}

// checkStated refuses a call whose target fields are not what the calling
// Promotion's own step of the call's alias states.
func checkStated(step string, promo *kargo.Promotion, req *Request) error {
	fields := steps.TargetFields(step)
	if len(fields) == 0 {
		return nil
	}
	if steps.ValidateConfig(step, req.Config) != nil {
		// The step refuses the config itself (422), naming what is wrong.
		return nil
	}
	call := map[string]any{}
	if len(req.Config) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(req.Config)))
		dec.UseNumber()
		if err := dec.Decode(&call); err != nil || steps.NormalizeConfig(step, call) != nil {
			return nil
		}
	}
	stated, err := readStatedStep(promo, req.Alias, step, fields)
	if err != nil {
		return refuse(http.StatusForbidden, ReasonConfigNotStated,
			"step %q of Promotion %q states a %s config the step server cannot read: %v", req.Alias, promo.Name, step, err)
	}
	if stated.found && stated.calls != step {
		calls := stated.calls
		if calls == "" {
			calls = "no fleet step the server can name"
		}
		return refuse(http.StatusForbidden, ReasonConfigNotStated,
			"step %q of Promotion %q calls %s, not %s: a %s call setting %s must come from a %s step of the Promotion",
			req.Alias, promo.Name, calls, step, step, strings.Join(fields, ", "), step)
	}
	for _, f := range fields {
		if err := checkStatedField(step, f, fields, call, stated, promo, req); err != nil {
			return err
		}
	}
	return nil
}

// checkStatedField refuses a call whose target field f is not what the
// calling Promotion's step states: set when the step leaves it unset or
// has no such step, another value than its literal, or set at all when an
// expression computes it.
func checkStatedField(step, f string, fields []string, call map[string]any, stated statedStep, promo *kargo.Promotion,
	req *Request) error {
	got, set := call[f]
	if set && isDefault(got) {
		set = false
	}
	if !stated.found {
		if set {
			return refuse(http.StatusForbidden, ReasonConfigNotStated,
				"%s config field %s is %s, but Promotion %q has no step aliased %q: a step call sets %s only as "+
					"the calling Promotion's own step states them", step, f, show(got), promo.Name, req.Alias,
				strings.Join(fields, ", "))
		}
		return nil
	}
	want := stated.fields[f]
	switch want.kind {
	case statedUnset:
		if set {
			return refuse(http.StatusForbidden, ReasonConfigNotStated,
				"%s config field %s is %s, but step %q of Promotion %q leaves it unset", step, f, show(got),
				req.Alias, promo.Name)
		}
	case statedLiteral:
		if !set || !reflect.DeepEqual(got, want.value) {
			shown := "unset"
			if set {
				shown = show(got)
			}
			return refuse(http.StatusForbidden, ReasonConfigNotStated,
				"%s config field %s is %s, but step %q of Promotion %q states %s", step, f, shown,
				req.Alias, promo.Name, show(want.value))
		}
	case statedExpression:
		if set {
			return refuse(http.StatusForbidden, ReasonConfigNotStated,
				"%s config field %s is %s, but step %q of Promotion %q computes it with an expression (%s) "+
					"the step server cannot check: state the value literally in the Stage's promotion template "+
					"(a template or task variable), or leave it at its default", step, f, show(got),
				req.Alias, promo.Name, strutil.Ellipsis(want.source, 200))
		}
	}
	return nil
}

// show formats a config value for a message.
func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(strutil.Ellipsis(s, 200))
	}
	return fmt.Sprint(v)
}
