// Package stagerecord keeps the record of the Stages a FleetStage generated:
// the name and UID of each wave and target Stage, in an immutable
// ConfigMap that the FleetStage's status names.
//
// Labels and a controller ownerReference prove nothing about a Stage: the
// API server accepts any ownerReference from an object's creator, so anyone
// who may create Stages can make one that looks generated. A UID is given by
// the API server and never reused, and only the controller writes the
// FleetStage's status; so a Stage is the FleetStage's only when its name and
// UID are the ones recorded. The record lives in a ConfigMap because a
// 10,000-target fleet's UIDs do not belong in a status; the ConfigMap is
// named after a hash of its content, so a replacement under that name with
// other content is refused, and it is immutable, so it never changes under
// its name. Wave Stage UIDs are also kept in the FleetStage's status
// (status.waves[].stageUID), read by the step server without a ConfigMap.
package stagerecord

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

const (
	// Key is the ConfigMap key holding the gzip-compressed JSON record.
	Key = "stages.json.gz"
	// maxRecordBytes bounds a decompressed record: 10,000 targets take
	// about 700 KB; anyone who may write ConfigMaps in the Project can write
	// one, and a small gzip could otherwise expand to gigabytes.
	maxRecordBytes = 16 << 20
	// hashLen is the length of the content hash in a record's name.
	hashLen = 16
	// nameInfix separates the FleetStage's name from the hash.
	nameInfix = "-stages-"
)

var (
	// ErrNotRecorded says a FleetStage has no record: it was created a
	// moment ago, by a version of kargo-fleet that kept none, or its record
	// was deleted.
	ErrNotRecorded = errors.New("the FleetStage has not recorded its Stages")
	// ErrRefused says the ConfigMap under the recorded name is not a record
	// of the FleetStage's: not controlled by it, or not what its name says.
	ErrRefused = errors.New("the Stage record is refused")
)

// Record maps the name of every Stage a FleetStage generated to its UID.
type Record struct {
	// Stages maps a Stage's name to its UID.
	Stages map[string]types.UID `json:"stages"`
}

// Has reports whether st is a recorded Stage: its name and UID are the
// ones the record holds.
func (r Record) Has(st metav1.Object) bool {
	uid, ok := r.Stages[st.GetName()]
	return ok && uid != "" && uid == st.GetUID()
}

// Keep keeps, in place, the Stages the record holds, and returns the names
// of the others. Each Stage is read where it lies: a filter taking a Stage
// by value copies it to the heap, once per Stage of the fleet.
func (r Record) Keep(stages []kargo.Stage) (kept []kargo.Stage, foreign []string) {
	n := 0
	for i := range stages {
		if !r.Has(&stages[i]) {
			foreign = append(foreign, stages[i].Name)
			continue
		}
		stages[n] = stages[i]
		n++
	}
	clear(stages[n:])
	return stages[:n], foreign
}

// encodeJSON is the record's canonical JSON: encoding/json sorts map keys,
// so equal records encode to equal bytes.
func encodeJSON(r Record) ([]byte, error) {
	if r.Stages == nil {
		r.Stages = map[string]types.UID{}
	}
	return json.Marshal(r)
}

// Name returns the name of the ConfigMap holding r for FleetStage
// fleetStage: "<fleetstage>-stages-<hash of the content>".
func Name(fleetStage string, r Record) (string, error) {
	raw, err := encodeJSON(r)
	if err != nil {
		return "", fmt.Errorf("error encoding the Stage record: %w", err)
	}
	return nameOf(fleetStage, raw), nil
}

func nameOf(fleetStage string, raw []byte) string {
	sum := sha256.Sum256(raw)
	prefix := strings.TrimRight(strutil.Truncate(fleetStage, 253-len(nameInfix)-hashLen), "-.")
	return prefix + nameInfix + hex.EncodeToString(sum[:])[:hashLen]
}

// ConfigMap returns the immutable ConfigMap holding r, controlled by fs.
func ConfigMap(fs *fleetv1alpha1.FleetStage, r Record) (*corev1.ConfigMap, error) {
	raw, err := encodeJSON(r)
	if err != nil {
		return nil, fmt.Errorf("error encoding the Stage record: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("error compressing the Stage record: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("error compressing the Stage record: %w", err)
	}
	immutable := true
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fs.Namespace, Name: nameOf(fs.Name, raw),
			Labels:          map[string]string{fleetv1alpha1.FleetStageLabel: fs.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(fs)},
		},
		Immutable:  &immutable,
		BinaryData: map[string][]byte{Key: buf.Bytes()},
	}, nil
}

func ownerRef(fs *fleetv1alpha1.FleetStage) metav1.OwnerReference {
	controller := true
	return metav1.OwnerReference{
		APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetStage", Name: fs.Name, UID: fs.UID, Controller: &controller,
	}
}

// Decode reads the record a ConfigMap holds, for FleetStage fs. It refuses a
// ConfigMap fs does not control, and one whose name is not the hash of its
// content (a ConfigMap someone else created under the recorded name).
func Decode(cm *corev1.ConfigMap, fs *fleetv1alpha1.FleetStage) (Record, error) {
	if !ControlledBy(cm, fs) {
		return Record{}, fmt.Errorf("%w: ConfigMap %q is not controlled by FleetStage %q", ErrRefused, cm.Name, fs.Name)
	}
	zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData[Key]))
	if err != nil {
		return Record{}, fmt.Errorf("%w: error decompressing %q: %w", ErrRefused, cm.Name, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxRecordBytes+1))
	if err != nil {
		return Record{}, fmt.Errorf("%w: error decompressing %q: %w", ErrRefused, cm.Name, err)
	}
	if len(raw) > maxRecordBytes {
		return Record{}, fmt.Errorf("%w: %q expands to more than %d bytes", ErrRefused, cm.Name, maxRecordBytes)
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, fmt.Errorf("%w: error decoding %q: %w", ErrRefused, cm.Name, err)
	}
	canonical, err := encodeJSON(r)
	if err != nil {
		return Record{}, fmt.Errorf("%w: error encoding %q: %w", ErrRefused, cm.Name, err)
	}
	if nameOf(fs.Name, canonical) != cm.Name {
		return Record{}, fmt.Errorf("%w: %q does not hold what its name says", ErrRefused, cm.Name)
	}
	return r, nil
}

// ControlledBy reports whether fs is the ConfigMap's controller, by UID.
func ControlledBy(cm *corev1.ConfigMap, fs *fleetv1alpha1.FleetStage) bool {
	ref := metav1.GetControllerOf(cm)
	return ref != nil && ref.Kind == "FleetStage" && ref.UID == fs.UID && ref.Name == fs.Name &&
		strings.HasPrefix(ref.APIVersion, fleetv1alpha1.GroupVersion.Group+"/")
}

// Reader reads FleetStages' records and keeps the newest decoded record of
// each: a record never changes under its name, so it is read from the API
// server once per process.
type Reader struct {
	reader client.Reader
	mu     sync.Mutex
	// latest holds, by FleetStage UID, the last record read.
	latest map[types.UID]named
}

type named struct {
	name   string
	record Record
}

// NewReader returns a Reader getting ConfigMaps with reader (an uncached
// reader: kargo-fleet does not list or watch ConfigMaps).
func NewReader(reader client.Reader) *Reader {
	return &Reader{reader: reader, latest: map[types.UID]named{}}
}

// Read returns the record fs.status.stageRecord names; ErrNotRecorded when
// it names none or the ConfigMap does not exist.
func (r *Reader) Read(ctx context.Context, fs *fleetv1alpha1.FleetStage) (Record, error) {
	name := fs.Status.StageRecord
	if name == "" {
		return Record{}, ErrNotRecorded
	}
	r.mu.Lock()
	n, ok := r.latest[fs.UID]
	r.mu.Unlock()
	if ok && n.name == name {
		return n.record, nil
	}
	cm := &corev1.ConfigMap{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Record{}, fmt.Errorf("%w: ConfigMap %q is gone", ErrNotRecorded, name)
		}
		return Record{}, fmt.Errorf("error getting the Stage record %q: %w", name, err)
	}
	rec, err := Decode(cm, fs)
	if err != nil {
		return Record{}, err
	}
	r.mu.Lock()
	r.latest[fs.UID] = named{name: name, record: rec}
	r.mu.Unlock()
	return rec, nil
}

// Controlled returns the ConfigMap named name when fs controls it, nil
// when it does not exist or is not fs's.
func (r *Reader) Controlled(ctx context.Context, fs *fleetv1alpha1.FleetStage, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, cm); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !ControlledBy(cm, fs) {
		return nil, nil
	}
	return cm, nil
}

// Collect deletes the record named name, which a newer one replaced: only
// a ConfigMap fs controls, and only the object read (UID precondition), so
// a record replaced by another of the same name is never deleted. A record
// that is gone already is collected.
func (r *Reader) Collect(ctx context.Context, w client.Writer, fs *fleetv1alpha1.FleetStage, name string) error {
	if name == "" || name == fs.Status.StageRecord {
		return nil
	}
	cm, err := r.Controlled(ctx, fs, name)
	if err != nil || cm == nil {
		return err
	}
	if err := w.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("error deleting the replaced Stage record %q: %w", name, err)
	}
	return nil
}

// Remember keeps a record the caller has just written under its name.
func (r *Reader) Remember(fs *fleetv1alpha1.FleetStage, name string, rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest[fs.UID] = named{name: name, record: rec}
}

// WaveStageUID returns the UID status.waves records for the wave Stage
// named stage, or "".
func WaveStageUID(fs *fleetv1alpha1.FleetStage, stage string) types.UID {
	for _, w := range fs.Status.Waves {
		if w.Stage == stage {
			return types.UID(w.StageUID)
		}
	}
	return ""
}
