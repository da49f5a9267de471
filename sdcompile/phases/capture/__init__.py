"""`sdcompile capture`: run a program (a pipeline) and record its transformer's class, config and forward inputs."""
