package kargo

import "encoding/json"

// AbortRequest is the value of a Promotion's AbortAnnotation as Kargo's
// mutating webhook rewrites it: the action, and who asked. For a request
// from Kargo's control plane (its API server acting for a UI or CLI user)
// the webhook keeps the actor the control plane wrote and sets
// ControlPlane; for anyone else it writes the requesting user
// ("kubernetes:<user>").
type AbortRequest struct {
	Action       string `json:"action,omitempty"`
	Actor        string `json:"actor,omitempty"`
	ControlPlane bool   `json:"controlPlane,omitempty"`
}

// AbortRequestOf reads the AbortAnnotation: JSON, or a bare action. false
// when there is none or it names no action.
func AbortRequestOf(annotations map[string]string) (*AbortRequest, bool) {
	v, ok := annotations[AbortAnnotation]
	if !ok {
		return nil, false
	}
	var r AbortRequest
	if json.Valid([]byte(v)) {
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, false
		}
	} else {
		r.Action = v
	}
	if r.Action == "" {
		return nil, false
	}
	return &r, true
}

// String is the annotation's value.
func (r *AbortRequest) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}
