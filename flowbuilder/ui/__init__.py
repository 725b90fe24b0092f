"""The NiceGUI visual builder, the only package that imports nicegui.

Entry point: :func:`flowbuilder.ui.app.register_pages`.
"""
