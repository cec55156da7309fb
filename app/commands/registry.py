def register(commands) -> None:
    pass
