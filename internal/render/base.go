package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// BaseStage is the Stage a FleetStage expands: where its Freight comes from,
// and what promoting ONE target means.
type BaseStage struct {
	// RequestedFreight says where the first wave takes Freight from.
	RequestedFreight []kargo.FreightRequest
	// Vars are Stage variables every target Stage inherits.
	Vars []kargo.ExpressionVariable
	// PromotionTemplate is the per-target promotion template.
	PromotionTemplate *kargo.PromotionTemplate
	// Verification is the per-target verification.
	Verification *apiextensionsv1.JSON
}

// BaseFromStage adopts an existing Kargo Stage.
func BaseFromStage(s *kargo.Stage) BaseStage {
	spec := s.Spec.DeepCopy()
	return BaseStage{
		RequestedFreight:  spec.RequestedFreight,
		Vars:              spec.Vars,
		PromotionTemplate: spec.PromotionTemplate,
		Verification:      spec.Verification,
	}
}

// BaseFromInline converts an inline Stage spec. It fails when the promotion
// template or verification is not what Kargo expects; the error names the
// field.
func BaseFromInline(in *fleetv1alpha1.InlineStageSpec) (BaseStage, error) {
	b := BaseStage{}
	for _, rf := range in.RequestedFreight {
		b.RequestedFreight = append(b.RequestedFreight, kargo.FreightRequest{
			Origin: kargo.FreightOrigin{Kind: rf.Origin.Kind, Name: rf.Origin.Name},
			Sources: kargo.FreightSources{
				Direct:           rf.Sources.Direct,
				Stages:           append([]string(nil), rf.Sources.Stages...),
				RequiredSoakTime: rf.Sources.RequiredSoakTime.DeepCopy(),
			},
		})
	}
	for _, v := range in.Vars {
		b.Vars = append(b.Vars, kargo.ExpressionVariable{Name: v.Name, Value: v.Value})
	}
	tmpl := &kargo.PromotionTemplate{}
	if err := strictUnmarshal(in.PromotionTemplate.Raw, tmpl); err != nil {
		return BaseStage{}, fmt.Errorf("spec.stage.inline.promotionTemplate: %w", err)
	}
	if len(tmpl.Spec.Steps) == 0 {
		return BaseStage{}, fmt.Errorf("spec.stage.inline.promotionTemplate.spec.steps: at least one step is required")
	}
	for i, s := range tmpl.Spec.Steps {
		if (s.Uses == "") == (s.Task == nil) {
			return BaseStage{}, fmt.Errorf("spec.stage.inline.promotionTemplate.spec.steps[%d]: exactly one of uses or task must be set", i)
		}
	}
	// Kargo's Stage webhook would refuse every generated Stage.
	if errs := kargo.ValidateTaskSteps(field.NewPath("spec", "stage", "inline", "promotionTemplate", "spec", "steps"),
		tmpl.Spec.Steps); len(errs) > 0 {
		return BaseStage{}, fmt.Errorf("%s: %s", errs[0].Field, errs[0].Detail)
	}
	b.PromotionTemplate = tmpl
	if in.Verification != nil && len(in.Verification.Raw) > 0 {
		b.Verification = &apiextensionsv1.JSON{Raw: append([]byte(nil), in.Verification.Raw...)}
	}
	return b, nil
}

func strictUnmarshal(raw []byte, into any) error {
	if len(raw) == 0 {
		return fmt.Errorf("required value")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("invalid Kargo promotion template: %w", err)
	}
	// A second document after the first would be dropped unseen.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid Kargo promotion template: data after the JSON object")
	}
	return nil
}
