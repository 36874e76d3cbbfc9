package serve

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What rows and selectors read of the recorded objects, with the scanner:
// the fields kubectl's columns and the API server's field selectors name,
// and the members of the metadata (a row's object is its metadata).

// objectMeta is what a row reads of an object's metadata.
type objectMeta struct {
	name              string
	creationTimestamp time.Time
	deletionTimestamp *metav1.Time
	// raw is the metadata as recorded, and cut the part of it that holds
	// managedFields (the member and a comma), which kubectl never reads of
	// a row's object.
	raw     []byte
	cut     [2]int
	hasMeta bool
}

// readMeta reads the metadata object at the cursor.
func readMeta(s *scanner, md *objectMeta) {
	s.ws()
	start := s.i
	md.hasMeta = s.peek() == '{'
	prevEnd := -1 // where the member before ends, -1 before the first
	for key := range s.members() {
		member := s.memberStart
		switch string(key) {
		case "name":
			md.name = s.str()
		case "creationTimestamp":
			md.creationTimestamp = s.time()
		case "deletionTimestamp":
			if s.null() {
				md.deletionTimestamp = nil
				break
			}
			md.deletionTimestamp = &metav1.Time{Time: s.time()}
		case "managedFields":
			s.skip()
			if prevEnd >= 0 {
				// ,"managedFields":[...]
				md.cut = [2]int{prevEnd - start, s.i - start}
			} else {
				// "managedFields":[...], and the comma if one follows
				end := s.i
				if s.peek() == ',' {
					end = s.i + 1
				}
				md.cut = [2]int{member - start, end - start}
			}
		default:
			s.skip()
		}
		prevEnd = s.i
	}
	if s.err == nil && md.hasMeta {
		md.raw = s.b[start:s.i]
	}
}

// appendPartial appends the PartialObjectMetadata of md: what a row's
// object is unless the client asks for more.
func appendPartial(dst []byte, md *objectMeta) []byte {
	dst = append(dst, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`...)
	switch {
	case !md.hasMeta:
		dst = append(dst, "{}"...)
	default:
		dst = append(dst, md.raw[:md.cut[0]]...)
		dst = append(dst, md.raw[md.cut[1]:]...)
	}
	return append(dst, '}')
}

// readPod reads what kubectl's pod columns need (podCells) into pod, whose
// lists' memory it reuses.
func readPod(raw []byte, md *objectMeta, pod *corev1.Pod) error {
	s := &scanner{b: raw}
	resetPod(pod)
	for key := range s.members() {
		switch string(key) {
		case "metadata":
			readMeta(s, md)
		case "spec":
			readPodSpec(s, &pod.Spec)
		case "status":
			readPodStatus(s, &pod.Status)
		default:
			s.skip()
		}
	}
	if s.err != nil {
		return fmt.Errorf("pod: %w", s.err)
	}
	pod.Name, pod.CreationTimestamp, pod.DeletionTimestamp = md.name, metav1.Time{Time: md.creationTimestamp}, md.deletionTimestamp
	return nil
}

// resetPod empties pod for readPod, keeping the memory of its lists.
func resetPod(p *corev1.Pod) {
	ic, rg := p.Spec.InitContainers[:0], p.Spec.ReadinessGates[:0]
	conds, ics, cs := p.Status.Conditions[:0], p.Status.InitContainerStatuses[:0], p.Status.ContainerStatuses[:0]
	*p = corev1.Pod{}
	p.Spec.InitContainers, p.Spec.ReadinessGates = ic, rg
	p.Status.Conditions, p.Status.InitContainerStatuses, p.Status.ContainerStatuses = conds, ics, cs
}

// containerSlots stand for a pod's containers, of which podCells counts
// only how many there are: a row does not make room for the containers'
// specs. Nothing writes them.
var containerSlots = make([]corev1.Container, 16)

func readPodSpec(s *scanner, spec *corev1.PodSpec) {
	for key := range s.members() {
		switch string(key) {
		case "containers":
			n := 0
			for range s.elements() {
				s.skip()
				n++
			}
			if n <= len(containerSlots) {
				spec.Containers = containerSlots[:n:n]
			} else {
				spec.Containers = make([]corev1.Container, n)
			}
		case "initContainers":
			for range s.elements() {
				var c corev1.Container
				for key := range s.members() {
					switch string(key) {
					case "name":
						c.Name = s.str()
					case "restartPolicy":
						if s.null() {
							break
						}
						p := corev1.ContainerRestartPolicy(s.str())
						c.RestartPolicy = &p
					default:
						s.skip()
					}
				}
				spec.InitContainers = append(spec.InitContainers, c)
			}
		case "nodeName":
			spec.NodeName = s.str()
		case "readinessGates":
			for range s.elements() {
				var g corev1.PodReadinessGate
				for key := range s.members() {
					if string(key) == "conditionType" {
						g.ConditionType = corev1.PodConditionType(s.str())
					} else {
						s.skip()
					}
				}
				spec.ReadinessGates = append(spec.ReadinessGates, g)
			}
		default:
			s.skip()
		}
	}
}

func readPodStatus(s *scanner, st *corev1.PodStatus) {
	for key := range s.members() {
		switch string(key) {
		case "phase":
			st.Phase = corev1.PodPhase(s.str())
		case "reason":
			st.Reason = s.str()
		case "podIP":
			st.PodIP = s.str()
		case "nominatedNodeName":
			st.NominatedNodeName = s.str()
		case "conditions":
			for range s.elements() {
				var c corev1.PodCondition
				for key := range s.members() {
					switch string(key) {
					case "type":
						c.Type = corev1.PodConditionType(s.str())
					case "status":
						c.Status = corev1.ConditionStatus(s.str())
					default:
						s.skip()
					}
				}
				st.Conditions = append(st.Conditions, c)
			}
		case "initContainerStatuses":
			st.InitContainerStatuses = readContainerStatuses(s, st.InitContainerStatuses[:0])
		case "containerStatuses":
			st.ContainerStatuses = readContainerStatuses(s, st.ContainerStatuses[:0])
		default:
			s.skip()
		}
	}
}

func readContainerStatuses(s *scanner, out []corev1.ContainerStatus) []corev1.ContainerStatus {
	for range s.elements() {
		var c corev1.ContainerStatus
		for key := range s.members() {
			switch string(key) {
			case "name":
				c.Name = s.str()
			case "restartCount":
				c.RestartCount = s.int32()
			case "ready":
				c.Ready = s.bool()
			case "started":
				if s.null() {
					break
				}
				b := s.bool()
				c.Started = &b
			case "state":
				readContainerState(s, &c.State)
			case "lastState":
				readContainerState(s, &c.LastTerminationState)
			default:
				s.skip()
			}
		}
		out = append(out, c)
	}
	return out
}

func readContainerState(s *scanner, cs *corev1.ContainerState) {
	for key := range s.members() {
		if s.null() {
			continue
		}
		switch string(key) {
		case "waiting":
			w := &corev1.ContainerStateWaiting{}
			for key := range s.members() {
				if string(key) == "reason" {
					w.Reason = s.str()
				} else {
					s.skip()
				}
			}
			cs.Waiting = w
		case "running":
			s.skip()
			cs.Running = &corev1.ContainerStateRunning{}
		case "terminated":
			t := &corev1.ContainerStateTerminated{}
			for key := range s.members() {
				switch string(key) {
				case "reason":
					t.Reason = s.str()
				case "signal":
					t.Signal = s.int32()
				case "exitCode":
					t.ExitCode = s.int32()
				case "finishedAt":
					t.FinishedAt = metav1.Time{Time: s.time()}
				default:
					s.skip()
				}
			}
			cs.Terminated = t
		default:
			s.skip()
		}
	}
}

// cellsOf returns the cells of an object's row at the moment t, and reads
// its metadata into md; a pod is read into pod (nil: a new one).
func cellsOf(apiVersion, kind string, raw []byte, t time.Time, md *objectMeta, pod *corev1.Pod) ([]any, error) {
	if apiVersion == "v1" && kind == "Pod" {
		if pod == nil {
			pod = &corev1.Pod{}
		}
		if err := readPod(raw, md, pod); err != nil {
			return nil, err
		}
		return podCells(pod, t), nil
	}
	s := &scanner{b: raw}
	for key := range s.members() {
		if string(key) == "metadata" {
			readMeta(s, md)
		} else {
			s.skip()
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if cells, ok, err := typedCells(apiVersion, kind, raw, t); ok {
		return cells, err
	}
	return []any{md.name, since(md.creationTimestamp, t)}, nil
}

// parseMeta reads what selectors read of an object.
func parseMeta(raw []byte) (*meta, error) {
	m := &meta{}
	s := &scanner{b: raw}
	strs := func(fields map[string]*string) {
		for key := range s.members() {
			if p, ok := fields[string(key)]; ok {
				*p = s.str()
			} else {
				s.skip()
			}
		}
	}
	for key := range s.members() {
		switch string(key) {
		case "metadata":
			md := &m.Metadata
			for key := range s.members() {
				switch string(key) {
				case "name":
					md.Name = s.str()
				case "namespace":
					md.Namespace = s.str()
				case "labels":
					for key := range s.members() {
						if md.Labels == nil {
							md.Labels = map[string]string{}
						}
						md.Labels[string(key)] = s.str()
					}
				default:
					s.skip()
				}
			}
		case "involvedObject":
			io := &m.InvolvedObject
			strs(map[string]*string{"kind": &io.Kind, "namespace": &io.Namespace, "name": &io.Name, "uid": &io.UID,
				"apiVersion": &io.APIVersion, "resourceVersion": &io.ResourceVersion, "fieldPath": &io.FieldPath})
		case "reason":
			m.Reason = s.str()
		case "type":
			m.Type = s.str()
		case "source":
			strs(map[string]*string{"component": &m.Source.Component, "host": &m.Source.Host})
		case "spec":
			sp := &m.Spec
			strs(map[string]*string{"nodeName": &sp.NodeName, "restartPolicy": &sp.RestartPolicy,
				"schedulerName": &sp.SchedulerName, "serviceAccountName": &sp.ServiceAccountName})
		case "status":
			st := &m.Status
			strs(map[string]*string{"phase": &st.Phase, "podIP": &st.PodIP, "nominatedNodeName": &st.NominatedNodeName})
		default:
			s.skip()
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return m, nil
}
