package kargosim

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// autoPromotionEnabled reports whether the first of the ProjectConfig's
// promotion policies that selects the Stage enables auto-promotion. A
// policy selects by stageSelector (name: exact, "glob:" or "regex:", plus
// labels) or, in the older form, by stage name. No ProjectConfig: off.
func autoPromotionEnabled(cfg *kargo.ProjectConfig, stage metav1.ObjectMeta) (bool, error) {
	if cfg == nil {
		return false, nil
	}
	for _, p := range cfg.Spec.PromotionPolicies {
		sel := p.StageSelector
		if sel == nil {
			sel = &kargo.PromotionPolicySelector{Name: p.Stage}
		}
		if sel.Name != "" {
			ok, err := nameMatches(sel.Name, stage.Name)
			if err != nil {
				return false, fmt.Errorf("error parsing PromotionPolicy name pattern %q: %w", sel.Name, err)
			}
			if !ok {
				continue
			}
		}
		if len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
			s, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
			if err != nil {
				return false, fmt.Errorf("error parsing PromotionPolicy label selector: %w", err)
			}
			if !s.Matches(labels.Set(stage.Labels)) {
				continue
			}
		}
		return p.AutoPromotionEnabled, nil
	}
	return false, nil
}

func nameMatches(pattern, name string) (bool, error) {
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
