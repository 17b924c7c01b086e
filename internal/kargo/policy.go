package kargo

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PolicyFor returns the first of the ProjectConfig's promotion policies
// that selects the Stage, and its index; nil and -1 when none does (no
// auto-promotion). A policy selects by stageSelector (name: exact, "glob:"
// or "regex:", plus labels) or, in the older form, by stage name, as Kargo
// v1.11.2 does.
func (c *ProjectConfig) PolicyFor(stage metav1.ObjectMeta) (*PromotionPolicy, int, error) {
	if c == nil {
		return nil, -1, nil
	}
	for i := range c.Spec.PromotionPolicies {
		p := &c.Spec.PromotionPolicies[i]
		sel := p.StageSelector
		if sel == nil {
			sel = &PromotionPolicySelector{Name: p.Stage}
		}
		if sel.Name != "" {
			ok, err := policyNameMatches(sel.Name, stage.Name)
			if err != nil {
				return nil, -1, fmt.Errorf("error parsing PromotionPolicy name pattern %q: %w", sel.Name, err)
			}
			if !ok {
				continue
			}
		}
		if len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
			s, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
			if err != nil {
				return nil, -1, fmt.Errorf("error parsing PromotionPolicy label selector: %w", err)
			}
			if !s.Matches(labels.Set(stage.Labels)) {
				continue
			}
		}
		return p, i, nil
	}
	return nil, -1, nil
}

// AutoPromotionEnabled reports whether the first promotion policy that
// selects the Stage enables auto-promotion. No ProjectConfig: off.
func (c *ProjectConfig) AutoPromotionEnabled(stage metav1.ObjectMeta) (bool, error) {
	p, _, err := c.PolicyFor(stage)
	if err != nil || p == nil {
		return false, err
	}
	return p.AutoPromotionEnabled, nil
}

func policyNameMatches(pattern, name string) (bool, error) {
	switch {
	case strings.HasPrefix(pattern, "glob:"):
		return path.Match(strings.TrimPrefix(pattern, "glob:"), name)
	case strings.HasPrefix(pattern, "regex:"), strings.HasPrefix(pattern, "regexp:"):
		re, err := regexp.Compile(pattern[strings.Index(pattern, ":")+1:])
		if err != nil {
			return false, err
		}
		return re.MatchString(name), nil
	default:
		return pattern == name, nil
	}
}
