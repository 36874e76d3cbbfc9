package diff

import "testing"

// BenchmarkReplayEvents replays the Events of one pod of the report
// benchmark (crashLoop: about 100 revisions of 4 kubelet Events), the part
// of BenchmarkReplayCrashLoop that is replayEvents.
func BenchmarkReplayEvents(b *testing.B) {
	_, events := crashLoop(100)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(ReplayEvents(events)) == 0 {
			b.Fatal("no events")
		}
	}
}
