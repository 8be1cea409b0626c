package multiraft

import (
	"fmt"
	"log/slog"
)

// raftLogger adapts slog to the raft library's logger. The library logs
// elections and term changes at Info; they are routine for a node running
// many groups, so they go to Debug here, and warnings stay warnings.
type raftLogger struct{ log *slog.Logger }

func (l *raftLogger) Debug(v ...any)                 { l.log.Debug(fmt.Sprint(v...)) }
func (l *raftLogger) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Info(v ...any)                  { l.log.Debug(fmt.Sprint(v...)) }
func (l *raftLogger) Infof(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Warning(v ...any)               { l.log.Warn(fmt.Sprint(v...)) }
func (l *raftLogger) Warningf(format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}
func (l *raftLogger) Error(v ...any)                 { l.log.Error(fmt.Sprint(v...)) }
func (l *raftLogger) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *raftLogger) Fatal(v ...any)                 { l.Panic(v...) }
func (l *raftLogger) Fatalf(format string, v ...any) { l.Panicf(format, v...) }
func (l *raftLogger) Panic(v ...any) {
	s := fmt.Sprint(v...)
	l.log.Error(s)
	panic(s)
}
func (l *raftLogger) Panicf(format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	l.log.Error(s)
	panic(s)
}
