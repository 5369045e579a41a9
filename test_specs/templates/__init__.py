"""What a reused test does with one OpInfo / ModuleInfo sample: the template kit (what a template
is, sample cap, comparison helpers), the op and module templates, and their registry.
"""
