"""``gate`` called thrice in a traced loop; the third call takes the other branch of line 8."""
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        if x.sum() > 0:
            return y + 1
        return -y


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def forward(self, xs):
        out = []
        for x in xs:
            out.append(self.gate(x))
        return torch.stack(out)


example_inputs = {
    "Model": lambda: ((torch.ones(2, 3), torch.ones(2, 3) * 2, -torch.ones(2, 3)),),
}
