// Package peers runs Parley's benchmark workloads against the systems it is
// compared with: the kv workload against etcd's JSON gateway (EtcdKV), kv
// puts as NATS JetStream publishes (NATSPublish) and the queue workload
// against RabbitMQ quorum queues (RabbitMQQueue). Each picks keys, values
// and pacing as its Parley twin in package bench does, and bench measures
// them alike.
//
// It is the one package that links the NATS and RabbitMQ client libraries.
// Only cmd/parley-bench imports it, so the server binary, cmd/parley,
// carries none of them (internal/archtest checks this).
package peers
