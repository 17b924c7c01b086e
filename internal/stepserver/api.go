package stepserver

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// PathPrefix is the path steps are served under: POST /v1/steps/<name>.
const PathPrefix = "/v1/steps/"

// Request is the JSON body of POST /v1/steps/<name>. The shipped
// ClusterPromotionTasks build it from Kargo's ctx with quote({...}); unknown
// fields are refused.
type Request struct {
	// Project is the Kargo Project of the Promotion (ctx.project). The token
	// must be this Project's.
	Project string `json:"project"`
	// Stage is the Stage being promoted (ctx.stage).
	Stage string `json:"stage"`
	// Promotion is the calling Promotion (ctx.promotion); it must exist in the
	// Project, be Running and promote Stage to Freight.
	Promotion string `json:"promotion"`
	// Freight is the Freight being promoted (ctx.targetFreight.name).
	Freight string `json:"freight"`
	// Alias is the step's alias (ctx.meta.step.alias); with Promotion it is
	// the request's idempotency key.
	Alias string `json:"alias"`
	// Actor is ctx.meta.promotion.actor, as the shipped tasks send it. The
	// server never reads it: the actor it records is the calling
	// Promotion's kargo.akuity.io/create-actor annotation, which only Kargo
	// writes, so a holder of the step token cannot name another actor.
	Actor string `json:"actor,omitempty"`
	// Rollback is ctx.meta.promotion.rollback. Like Actor it is read from
	// the Promotion itself (annotation kargo.akuity.io/rollback), not from
	// the body.
	Rollback bool `json:"rollback,omitempty"`
	// UIBaseURL is Kargo's UI URL (ctx.uiBaseUrl), used to build links.
	UIBaseURL string `json:"uiBaseURL,omitempty"`
	// Config is the step's config, validated by schemas/<step>.json.
	Config json.RawMessage `json:"config,omitempty"`
}

// Response is the JSON body of every answer of the step server, whatever its
// HTTP status: the step's Result, plus, for a refusal or a transient error,
// the status and a reason.
//
// HTTP 200 carries the step's state. 4xx refuses the request; its state is
// Failed and the tasks' failureExpression fails the step with Message. 503
// means "try again" (state Running); Kargo polls again.
type Response struct {
	// State is Running, Succeeded or Failed.
	State steps.State `json:"state"`
	// Message says what happened, for people.
	Message string `json:"message"`
	// Outputs are the step's outputs; never null.
	Outputs map[string]any `json:"outputs"`
	// Error is set when the request was refused or could not be served.
	Error *ErrorInfo `json:"error,omitempty"`
}

// ErrorInfo says why a request was not served.
type ErrorInfo struct {
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Reason is a short PascalCase reason, e.g. Unauthorized, NotRunning.
	Reason string `json:"reason"`
}

// Refusal reasons, also the "reason" label of the refusal metric.
const (
	ReasonBadRequest       = "BadRequest"
	ReasonTooLarge         = "RequestTooLarge"
	ReasonMethodNotAllowed = "MethodNotAllowed"
	ReasonUnknownStep      = "UnknownStep"
	ReasonNoToken          = "MissingToken"
	ReasonBadToken         = "InvalidToken"
	ReasonExpiredToken     = "ExpiredToken"
	ReasonRevokedToken     = "RevokedToken"
	ReasonNoPromotion      = "PromotionNotFound"
	ReasonMismatch         = "PromotionMismatch"
	ReasonNotRunning       = "PromotionNotRunning"
	ReasonNoStage          = "StageNotFound"
	ReasonNotFleet         = "StageNotManaged"
	ReasonNoFleetStage     = "FleetStageNotFound"
	ReasonNotWaveStage     = "NotAWaveStage"
	ReasonInvalidConfig    = "InvalidConfig"
	// ReasonConfigNotStated refuses a call whose config sets a field that
	// chooses what Freight or rollout the step acts on otherwise than the
	// calling Promotion's own step states it (403).
	ReasonConfigNotStated = "ConfigNotStated"
	ReasonUnavailable     = "Unavailable"
	// ReasonAmbiguousJSON refuses a body with duplicate keys, or keys that
	// differ from the field names only in case (422).
	ReasonAmbiguousJSON = "AmbiguousJSON"
	// ReasonInternal answers a request whose handler panicked (503).
	ReasonInternal = "InternalError"
	// ReasonNotGenerated refuses a Stage that looks generated (labels and a
	// controller reference to the FleetStage, which anyone who may create
	// Stages can write) but whose name and UID the FleetStage did not
	// record (403).
	ReasonNotGenerated = "StageNotGenerated"
)

// requestKeys are the JSON names of Request's fields, spelled as they must be.
var requestKeys = jsonNames(reflect.TypeFor[Request]())

// jsonNames returns the JSON names of a struct type's fields.
func jsonNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// Field bounds of a Request.
const (
	maxAliasLen = 253
	maxActorLen = 1024
	maxURLLen   = 2048
)

// Validate checks the fields of a request that do not need the cluster.
func (r *Request) Validate() error {
	for _, f := range []struct{ name, value string }{
		{"project", r.Project}, {"stage", r.Stage}, {"promotion", r.Promotion}, {"freight", r.Freight},
	} {
		if f.value == "" {
			return fmt.Errorf("%s is required", f.name)
		}
		if errs := validation.IsDNS1123Subdomain(f.value); len(errs) > 0 {
			return fmt.Errorf("%s %q is not a valid name: %s", f.name, f.value, errs[0])
		}
	}
	switch {
	case r.Alias == "":
		return fmt.Errorf("alias is required")
	case len(r.Alias) > maxAliasLen:
		return fmt.Errorf("alias is longer than %d bytes", maxAliasLen)
	case len(r.Actor) > maxActorLen:
		return fmt.Errorf("actor is longer than %d bytes", maxActorLen)
	case len(r.UIBaseURL) > maxURLLen:
		return fmt.Errorf("uiBaseURL is longer than %d bytes", maxURLLen)
	}
	if r.UIBaseURL != "" {
		if _, err := url.Parse(r.UIBaseURL); err != nil {
			return fmt.Errorf("uiBaseURL: %w", err)
		}
	}
	return nil
}

// stepContext returns the request's Kargo context. Who started the
// Promotion, and whether it is a rollback, come from the Promotion as Kargo
// stored it, never from the body.
func (r *Request) stepContext(promo *kargo.Promotion) steps.StepContext {
	return steps.StepContext{
		Project: r.Project, Stage: r.Stage, Promotion: r.Promotion, Freight: r.Freight,
		Alias:     r.Alias,
		Actor:     promo.Annotations[kargo.CreateActorAnnotation],
		Rollback:  promo.Annotations[kargo.RollbackAnnotation] == "true",
		UIBaseURL: r.UIBaseURL,
	}
}
