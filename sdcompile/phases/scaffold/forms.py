"""Which of an op's recipe forms (catalogs/ops/<op>.toml) each site's chain has: the form whose start the site holds
(a LayerNorm for mindiesd::adaln, the multiply by 1 + scale after an RMSNorm for mindiesd::scale_shift), else the
form most of the model's sites fit (RoPE's forms have no start op)."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.graph.chain_extent import form_for_site
from sdcompile.core.graph.pattern_recipes import Recipe, recipe_for_sites


@dataclass(frozen=True)
class SiteForms:
    forms: tuple[Recipe, ...]  # the op's recipes, in catalog order
    default: Recipe | None  # the form most sites fit, for a site holding no form's start

    @classmethod
    def of_recipes(cls, recipes, site_targets) -> SiteForms:
        """`recipes`: the op's (pattern_recipes.recipes_for), in catalog order."""
        # a form told by its start's operand (scale_shift's multiply by 1 + scale) serves only sites holding that
        # start: a site holding none gets the op's others, whose refusal says what the chain lacks
        forms = tuple(recipes)
        general = [f for f in forms if f.start_operand is None]
        return cls(forms, recipe_for_sites(site_targets, general) if general else None)

    def of(self, site) -> Recipe | None:
        """The recipe a site's chain is written with."""

        return form_for_site(self.forms, site.before or site.after) or self.default
