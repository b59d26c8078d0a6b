// Reads a JSON array of Kubernetes objects on stdin and prints, for each, null (valid) or the first schema error.
// The schemas are generated from the Prometheus Operator's own CRDs by kubernetes-models-ts.
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";

const MODELS = { PodMonitor, PrometheusRule, ServiceMonitor };

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map((obj) => {
  const Model = MODELS[obj.kind];
  if (obj.apiVersion !== "monitoring.coreos.com/v1" || Model === undefined) {
    return `no upstream schema here for ${obj.apiVersion} ${obj.kind}`;
  }
  try {
    new Model(obj).validate();
    return null;
  } catch (error) {
    return String(error.message).slice(0, 500);
  }
});
process.stdout.write(JSON.stringify(results));
