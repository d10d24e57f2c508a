"""innet on a Docker Swarm: the stack's container roles (:mod:`.roles`), deploying and
reading a stack (:mod:`.stack`), its TLS keys (:mod:`.certs`), the image in a registry
(:mod:`.registry`), and a multi-node test swarm of ``dockerd`` instances in network
namespaces (:mod:`.lab`)."""
