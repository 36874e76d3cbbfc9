package serve

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The readings of objects by encoding/json that the scanner replaced: the
// tests check that it reads the same.

// cellsOfJSON is the encoding/json reading of cellsOf before the scanner (9th session): what the scanner must agree with. It returns the cells of an object's row at the moment t, and its
// metadata as recorded.
func cellsOfJSON(apiVersion, kind string, raw []byte, t time.Time) ([]any, json.RawMessage, error) {
	var md struct {
		Name              string       `json:"name"`
		CreationTimestamp metav1.Time  `json:"creationTimestamp"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	}
	switch kind {
	case "Pod":
		// What the columns read, not the whole pod: a row costs one parse
		// of the object, and one of its metadata.
		var p struct {
			Metadata json.RawMessage `json:"metadata"`
			Spec     struct {
				Containers     []struct{} `json:"containers"`
				InitContainers []struct {
					Name          string                         `json:"name"`
					RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
				} `json:"initContainers"`
				NodeName       string                    `json:"nodeName"`
				ReadinessGates []corev1.PodReadinessGate `json:"readinessGates"`
			} `json:"spec"`
			Status corev1.PodStatus `json:"status"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("pod: %w", err)
		}
		if err := json.Unmarshal(p.Metadata, &md); err != nil {
			return nil, nil, fmt.Errorf("pod metadata: %w", err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: md.Name, CreationTimestamp: md.CreationTimestamp, DeletionTimestamp: md.DeletionTimestamp},
			Spec:       corev1.PodSpec{Containers: make([]corev1.Container, len(p.Spec.Containers)), NodeName: p.Spec.NodeName, ReadinessGates: p.Spec.ReadinessGates},
			Status:     p.Status,
		}
		for _, c := range p.Spec.InitContainers {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy})
		}
		return podCells(pod, t), p.Metadata, nil
	}
	var m struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(m.Metadata, &md); err != nil {
		return nil, nil, err
	}
	// The other kinds' cells are encoding/json's already (typedCells).
	if cells, ok, err := typedCells(apiVersion, kind, raw, t); ok {
		return cells, m.Metadata, err
	}
	return []any{md.Name, since(md.CreationTimestamp.Time, t)}, m.Metadata, nil
}

// parseMetaJSON is parseMeta by encoding/json.
func parseMetaJSON(raw []byte) (*meta, error) {
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
